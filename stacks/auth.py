"""Who may call the chat API: Cognito users (the default) or SigV4-signed IAM principals.

`ApiAuth` is built into the API construct's scope instead of being a construct of its own: the
user pool, its client and the authorizer keep the construct paths, and so the logical ids, of
the stacks deployed before stacks/api.py was split. A new path would replace the user pool and
lose every user (tests/infra/test_logical_ids.py holds them to that).
"""

from __future__ import annotations

from aws_cdk import CfnOutput, Duration, RemovalPolicy, Stack
from aws_cdk import aws_apigateway as apigw
from aws_cdk import aws_cognito as cognito
from constructs import Construct

from stacks import nag
from stacks.config import Config


class ApiAuth:
    """`method_options`: what every method of the API requires. With chatmemory:auth=cognito,
    a user pool without public sign-up, the public client of the README's CLI example and the
    API Gateway authorizer (their ids are stack outputs); with auth=iam, SigV4 (AWS_IAM)."""

    def __init__(self, scope: Construct, *, config: Config) -> None:
        self._config = config
        self.user_pool: cognito.UserPool | None = None
        self.client: cognito.UserPoolClient | None = None
        self.authorizer: apigw.CognitoUserPoolsAuthorizer | None = None
        if config.auth == "cognito":
            self.method_options = self._cognito(scope)
        else:
            self.method_options = apigw.MethodOptions(
                authorization_type=apigw.AuthorizationType.IAM
            )

    def _cognito(self, scope: Construct) -> apigw.MethodOptions:
        config = self._config
        user_pool = cognito.UserPool(
            scope,
            "UserPool",
            # Users are created by an administrator (see the README); no public sign-up.
            self_sign_up_enabled=False,
            sign_in_aliases=cognito.SignInAliases(email=True),
            auto_verify=cognito.AutoVerifiedAttrs(email=True),
            password_policy=cognito.PasswordPolicy(
                min_length=12,
                require_lowercase=True,
                require_uppercase=True,
                require_digits=True,
                require_symbols=True,
                temp_password_validity=Duration.days(3),
            ),
            mfa=cognito.Mfa.REQUIRED if config.mfa == "required" else cognito.Mfa.OPTIONAL,
            mfa_second_factor=cognito.MfaSecondFactor(otp=True, sms=False),
            account_recovery=cognito.AccountRecovery.EMAIL_ONLY,
            feature_plan=cognito.FeaturePlan.PLUS
            if config.threat_protection
            else cognito.FeaturePlan.ESSENTIALS,
            standard_threat_protection_mode=cognito.StandardThreatProtectionMode.FULL_FUNCTION
            if config.threat_protection
            else None,
            deletion_protection=config.production,
            removal_policy=RemovalPolicy.RETAIN if config.production else RemovalPolicy.DESTROY,
        )
        client = user_pool.add_client(
            "CliClient",
            # A public client for the README's CLI example (InitiateAuth with
            # USER_PASSWORD_AUTH, then refresh tokens; the web page takes a pasted token): no
            # secret, no SRP, and no OAuth flows, callback URLs or scopes (no hosted UI).
            generate_secret=False,
            auth_flows=cognito.AuthFlow(user_password=True),
            disable_o_auth=True,
            prevent_user_existence_errors=True,
            enable_token_revocation=True,
            id_token_validity=Duration.hours(1),
            access_token_validity=Duration.hours(1),
            refresh_token_validity=Duration.days(30),
        )
        authorizer = apigw.CognitoUserPoolsAuthorizer(
            scope, "Authorizer", cognito_user_pools=[user_pool]
        )
        if config.mfa != "required":
            nag.acknowledge(
                user_pool,
                "AwsSolutions-COG2",
                "MFA (TOTP) is optional so the CLI example can sign in with a password; set "
                "chatmemory:mfa=required to enforce it.",
            )
        if not config.threat_protection:
            nag.acknowledge(
                user_pool,
                "AwsSolutions-COG8",
                "Threat protection needs the Cognito Plus plan (billed per monthly active user); "
                "it is on for chatmemory:stage=prod or chatmemory:threatProtection=true.",
            )
        stack = Stack.of(scope)
        CfnOutput(stack, "UserPoolId", value=user_pool.user_pool_id)
        CfnOutput(stack, "UserPoolClientId", value=client.user_pool_client_id)
        self.user_pool, self.client, self.authorizer = user_pool, client, authorizer
        return apigw.MethodOptions(
            authorizer=authorizer, authorization_type=apigw.AuthorizationType.COGNITO
        )

    def acknowledge(self, api: apigw.RestApi) -> None:
        """cdk-nag's findings on the API's methods that this choice answers (call it once the
        routes exist)."""
        if self._config.auth != "iam":
            return
        for method in (c for c in api.node.find_all() if isinstance(c, apigw.Method)):
            if method.http_method != "OPTIONS":
                nag.acknowledge(
                    method,
                    "AwsSolutions-COG4",
                    "chatmemory:auth=iam: callers sign requests with SigV4 as IAM principals "
                    "(AWS_IAM authorization on every method) instead of Cognito tokens.",
                )
