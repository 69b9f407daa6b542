"""Who may call the chat API: Cognito users (the default) or SigV4-signed IAM principals; and who
is an agent (hand-off to a person, issue 16): members of a Cognito group, or with auth=iam the
sessions of one role that may call the /agent routes and nothing else.

`ApiAuth` is built into the API construct's scope instead of being a construct of its own: the
user pool, its client and the authorizer keep the construct paths, and so the logical ids, of
the stacks deployed before stacks/api.py was split. A new path would replace the user pool and
lose every user (tests/infra/test_logical_ids.py holds them to that).
"""

from __future__ import annotations

from aws_cdk import CfnElement, CfnOutput, Duration, RemovalPolicy, Stack
from aws_cdk import aws_apigateway as apigw
from aws_cdk import aws_cognito as cognito
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from constructs import Construct

from chatmemory import schema
from stacks import nag
from stacks.config import Config

# The first path segment of the agents' routes (handlers/chat_api.py).
AGENT_PREFIX = "agent"


class ApiAuth:
    """`method_options`: what every method of the API requires. With chatmemory:auth=cognito,
    a user pool without public sign-up, the public client of the docs' CLI example and the
    API Gateway authorizer (their ids are stack outputs); with auth=iam, SigV4 (AWS_IAM).

    Agents: with Cognito, the members of the `agentGroup` group (`agent_group`); with IAM, the
    sessions of `agent_role`, which may invoke the /agent routes only, and `user_policy`, a
    managed policy for the users' principals (every route but /agent). The chat function checks
    the group claim or the role itself (AGENT_GROUP, AGENT_ROLE_ARN): a user never passes."""

    def __init__(self, scope: Construct, *, config: Config) -> None:
        self._config = config
        self._scope = scope
        self.user_pool: cognito.UserPool | None = None
        self.client: cognito.UserPoolClient | None = None
        self.authorizer: apigw.CognitoUserPoolsAuthorizer | None = None
        self.agent_group: cognito.UserPoolGroup | None = None
        self.agent_role: iam.Role | None = None
        self.user_policy: iam.ManagedPolicy | None = None
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
            # Users are created by an administrator (docs/deploy/calling-the-api.md); no sign-up.
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
            # A public client for the docs' CLI example (InitiateAuth with
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
        # The agents: an administrator adds a person with `aws cognito-idp
        # admin-add-user-to-group`; the group reaches the function in the cognito:groups claim.
        self.agent_group = user_pool.add_group(
            "AgentGroup",
            group_name=config.agent_group,
            description="Agents: may list, read, answer and hand back sessions handed to a person "
            "(the /agent routes of the chat API)",
        )
        stack = Stack.of(scope)
        CfnOutput(stack, "UserPoolId", value=user_pool.user_pool_id)
        CfnOutput(stack, "UserPoolClientId", value=client.user_pool_client_id)
        CfnOutput(
            stack,
            "AgentGroupName",
            value=self.agent_group.group_name,
            description="Cognito group of the agents (hand-off to a person)",
        )
        self.user_pool, self.client, self.authorizer = user_pool, client, authorizer
        return apigw.MethodOptions(
            authorizer=authorizer, authorization_type=apigw.AuthorizationType.COGNITO
        )

    def authorize_agents(self, api: apigw.RestApi, handler: lambda_.Function) -> None:
        """Tell the chat function who the agents are; with auth=iam, the role agents assume and
        the managed policy for users (call it once the API exists: both name its routes)."""
        config = self._config
        if config.auth == "cognito":
            handler.add_environment(schema.ENV_AGENT_GROUP, config.agent_group)
            return
        stage = api.deployment_stage.stage_name
        # Every method of every path under /agent (`*` matches across `/` in an IAM resource).
        agent_routes = api.arn_for_execute_api("*", f"/{AGENT_PREFIX}/*", stage)
        # The account, not a principal of it: an administrator lets the contact centre's
        # principals assume the role (sts:AssumeRole in their own policies).
        self.agent_role = role = iam.Role(
            self._scope,
            "AgentRole",
            assumed_by=iam.AccountRootPrincipal(),
            description="Agents of the chat API: the /agent routes (hand-off to a person), "
            "nothing else",
        )
        role.add_to_policy(
            iam.PolicyStatement(actions=["execute-api:Invoke"], resources=[agent_routes])
        )
        handler.add_environment(schema.ENV_AGENT_ROLE_ARN, role.role_arn)
        if config.end_user_role_arns:
            # A backend's roles that may name their end users (schema.END_USER_HEADER).
            handler.add_environment(
                schema.ENV_END_USER_ROLE_ARNS, ",".join(config.end_user_role_arns)
            )
        # Users are whatever principals may invoke the API; this policy is what to attach to
        # them: every route of this API's stage except the agents'.
        self.user_policy = iam.ManagedPolicy(
            self._scope,
            "UserPolicy",
            description="Users of the chat API: every route but /agent (hand-off agents)",
            statements=[
                iam.PolicyStatement(
                    actions=["execute-api:Invoke"],
                    resources=[api.arn_for_execute_api("*", "/*", stage)],
                ),
                iam.PolicyStatement(
                    effect=iam.Effect.DENY,
                    actions=["execute-api:Invoke"],
                    resources=[agent_routes],
                ),
            ],
        )
        # How cdk-nag renders the two ARNs (the API's and the stage's logical ids).
        stack = Stack.of(self._scope)
        api_id = stack.get_logical_id(_cfn(api))
        stage_id = stack.get_logical_id(_cfn(api.deployment_stage))
        prefix = (
            "arn:<AWS::Partition>:execute-api:<AWS::Region>:<AWS::AccountId>:"
            f"<{api_id}>/<{stage_id}>"
        )
        nag.wildcard(
            role,
            f"{prefix}/*/{AGENT_PREFIX}/*",
            "The agents' routes are /agent/sessions and the paths below it (a session, its "
            "messages, its hand-back) with ids in the path; '*' stands for the method and those "
            "paths, within this API's stage only.",
        )
        nag.wildcard(
            self.user_policy,
            f"{prefix}/*/*",
            "Every route of this API's stage, for the users' principals (the paths carry session "
            "and record ids); the policy's Deny statement takes the agents' /agent routes out.",
        )
        CfnOutput(
            stack,
            "AgentRoleArn",
            value=role.role_arn,
            description="Role whose sessions are agents (hand-off to a person): grant the "
            "contact centre's principals sts:AssumeRole on it",
        )
        CfnOutput(
            stack,
            "UserPolicyArn",
            value=self.user_policy.managed_policy_arn,
            description="Managed policy for the users' principals: the chat API without /agent",
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


def _cfn(construct: Construct) -> CfnElement:
    element = construct.node.default_child
    assert isinstance(element, CfnElement)
    return element
