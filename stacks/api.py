"""The chat API: API Gateway REST API -> chat Lambda (proxy), behind Cognito (default) or IAM."""

from __future__ import annotations

from aws_cdk import CfnOutput, Duration, RemovalPolicy, Stack
from aws_cdk import aws_apigateway as apigw
from aws_cdk import aws_cognito as cognito
from aws_cdk import aws_logs as logs
from aws_cdk import aws_wafv2 as wafv2
from constructs import Construct

from chatmemory import schema
from stacks import nag
from stacks.config import CHAT_TIMEOUT_SECONDS, Config
from stacks.functions import LambdaFactory, retention
from stacks.long_term import LongTermMemory
from stacks.models import Models
from stacks.storage import Storage

# The error envelope of the Lambda ({"error": {"code", "message"}}) for answers the gateway
# gives itself (401, 403, 429, 413, 5xx...), so clients parse one shape.
_GATEWAY_ERROR = (
    '{"error": {"code": "$context.error.responseType", "message": $context.error.messageString}}'
)
# A message body is at most MAX_INPUT_CHARS characters (the Lambda enforces that exactly); the
# WAF blocks message bodies beyond the 16 KB it inspects by default, long before Lambda runs.
WAF_MESSAGE_BODY_LIMIT = 16 * 1024


class ChatApi(Construct):
    """REST API, chat Lambda, user pool (Cognito mode), access logs, throttling, CORS, WAF."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        config: Config,
        factory: LambdaFactory,
        storage: Storage,
        models: Models,
        long_term: LongTermMemory,
    ) -> None:
        super().__init__(scope, construct_id)
        self._config = config
        self.handler = factory.function(
            self,
            "Chat",
            handler="handlers.chat_api.handler",
            description="Chat API: sessions, messages, recall",
            environment={
                **storage.environment(storage.sessions, storage.conversations, storage.users),
                **models.environment,
                **long_term.environment,
                schema.ENV_MAX_INPUT_CHARS: str(config.max_input_chars),
                schema.ENV_TURN_TTL_DAYS: str(config.turn_ttl_days),
                # API Gateway answers preflights; the Lambda adds the header to each answer.
                schema.ENV_CORS_ORIGINS: ",".join(config.cors_origins),
            },
            # API Gateway stops waiting after 29 s; model calls are budgeted below that.
            timeout=Duration.seconds(CHAT_TIMEOUT_SECONDS),
            memory_mb=1024,
        )
        # Exactly the calls of the chat routes (chatmemory/adapters/dynamodb.py): BatchGetItem
        # reads a session with its caller's state; a new session's transaction checks the
        # caller's generation (ConditionCheckItem); an import writes turns in batches.
        storage.grant(
            self.handler,
            storage.sessions,
            "dynamodb:GetItem",
            "dynamodb:BatchGetItem",
            "dynamodb:Query",
            "dynamodb:PutItem",
            "dynamodb:UpdateItem",
        )
        storage.grant(
            self.handler,
            storage.conversations,
            "dynamodb:GetItem",
            "dynamodb:Query",
            "dynamodb:PutItem",
            "dynamodb:UpdateItem",
            "dynamodb:BatchWriteItem",
        )
        storage.grant(
            self.handler,
            storage.users,
            "dynamodb:GetItem",
            "dynamodb:BatchGetItem",
            "dynamodb:UpdateItem",
            "dynamodb:ConditionCheckItem",
        )
        models.grant_text(self.handler)
        models.grant_embed(self.handler)
        # Recall only searches; deleting from the indexes is the purge's work.
        long_term.grant(self.handler, search=schema.LONG_TERM_INDEXES)

        self.user_pool: cognito.UserPool | None = None
        self.client: cognito.UserPoolClient | None = None
        if config.auth == "cognito":
            method_options = self._cognito()
        else:
            method_options = apigw.MethodOptions(authorization_type=apigw.AuthorizationType.IAM)

        access_logs = logs.LogGroup(
            self,
            "AccessLogs",
            retention=retention(config.log_retention_days),
            removal_policy=RemovalPolicy.RETAIN if config.production else RemovalPolicy.DESTROY,
        )
        self.rest_api = apigw.RestApi(
            self,
            "RestApi",
            description="Chat memory API",
            endpoint_types=[apigw.EndpointType.REGIONAL],
            # The account-level role that lets API Gateway write access and execution logs.
            cloud_watch_role=True,
            cloud_watch_role_removal_policy=RemovalPolicy.RETAIN,
            deploy_options=apigw.StageOptions(
                stage_name="v1",
                throttling_rate_limit=config.throttle_rate,
                throttling_burst_limit=config.throttle_burst,
                access_log_destination=apigw.LogGroupLogDestination(access_logs),
                access_log_format=apigw.AccessLogFormat.json_with_standard_fields(
                    caller=True,
                    http_method=True,
                    ip=True,
                    protocol=True,
                    request_time=True,
                    resource_path=True,
                    response_length=True,
                    status=True,
                    user=True,
                ),
                logging_level=apigw.MethodLoggingLevel.ERROR,
                data_trace_enabled=False,
                metrics_enabled=True,
                tracing_enabled=True,
            ),
            default_cors_preflight_options=apigw.CorsOptions(
                allow_origins=list(config.cors_origins),
                allow_methods=["GET", "POST", "DELETE", "OPTIONS"],
                allow_headers=[
                    "Authorization",
                    "Content-Type",
                    "X-Amz-Date",
                    "X-Amz-Security-Token",
                ],
                max_age=Duration.hours(1),
            ),
            default_method_options=method_options,
        )
        integration = apigw.LambdaIntegration(self.handler, proxy=True, allow_test_invoke=False)
        # Every route goes to the Lambda, which answers 404 for unknown paths; the routes are
        # defined once, in the handler.
        self.rest_api.root.add_proxy(default_integration=integration, any_method=True)
        self._gateway_errors()
        self._acknowledge()
        if config.waf:
            self._waf()

        stack = Stack.of(self)
        CfnOutput(stack, "ApiUrl", value=self.rest_api.url, description="Base URL of the chat API")
        CfnOutput(stack, "Region", value=stack.region)
        if self.user_pool is not None and self.client is not None:
            CfnOutput(stack, "UserPoolId", value=self.user_pool.user_pool_id)
            CfnOutput(stack, "UserPoolClientId", value=self.client.user_pool_client_id)

    def _cognito(self) -> apigw.MethodOptions:
        config = self._config
        self.user_pool = cognito.UserPool(
            self,
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
        self.client = self.user_pool.add_client(
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
        self.authorizer = apigw.CognitoUserPoolsAuthorizer(
            self, "Authorizer", cognito_user_pools=[self.user_pool]
        )
        if config.mfa != "required":
            nag.acknowledge(
                self.user_pool,
                "AwsSolutions-COG2",
                "MFA (TOTP) is optional so the CLI example can sign in with a password; set "
                "chatmemory:mfa=required to enforce it.",
            )
        if not config.threat_protection:
            nag.acknowledge(
                self.user_pool,
                "AwsSolutions-COG8",
                "Threat protection needs the Cognito Plus plan (billed per monthly active user); "
                "it is on for chatmemory:stage=prod or chatmemory:threatProtection=true.",
            )
        return apigw.MethodOptions(
            authorizer=self.authorizer, authorization_type=apigw.AuthorizationType.COGNITO
        )

    def _gateway_errors(self) -> None:
        origin = self._config.cors_origins[0]
        headers = {"Access-Control-Allow-Origin": f"'{origin}'"}
        for construct_id, kind in (
            ("Default4xx", apigw.ResponseType.DEFAULT_4_XX),
            ("Default5xx", apigw.ResponseType.DEFAULT_5_XX),
        ):
            self.rest_api.add_gateway_response(
                construct_id,
                type=kind,
                response_headers=headers,
                templates={"application/json": _GATEWAY_ERROR},
            )

    def _acknowledge(self) -> None:
        api = self.rest_api
        nag.acknowledge(
            api,
            "AwsSolutions-APIG2",
            "One proxy route carries every request to the chat Lambda, which validates paths, "
            "query strings and JSON bodies against the API's pydantic models (the OpenAPI "
            "contract) and answers 400 with a JSON error; a gateway validator would have no "
            "models to check.",
        )
        nag.acknowledge(
            api.node.find_child("CloudWatchRole"),
            "AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/"
            "AmazonAPIGatewayPushToCloudWatchLogs]",
            "API Gateway's account-level logging role (needed for access and execution logs) "
            "uses the AWS managed policy that AWS documents for it.",
        )
        if self._config.auth == "iam":
            for method in _methods(api):
                if method.http_method != "OPTIONS":
                    nag.acknowledge(
                        method,
                        "AwsSolutions-COG4",
                        "chatmemory:auth=iam: callers sign requests with SigV4 as IAM principals "
                        "(AWS_IAM authorization on every method) instead of Cognito tokens.",
                    )
        if not self._config.waf:
            nag.acknowledge(
                api,
                "AwsSolutions-APIG3",
                "WAF costs a monthly fee per web ACL and rule; it is on for chatmemory:stage=prod "
                "or chatmemory:waf=true. Throttling and the Lambda's input limits stay on.",
            )

    def _waf(self) -> None:
        rules = [
            wafv2.CfnWebACL.RuleProperty(
                name="RatePerIp",
                priority=0,
                action=wafv2.CfnWebACL.RuleActionProperty(block={}),
                statement=wafv2.CfnWebACL.StatementProperty(
                    rate_based_statement=wafv2.CfnWebACL.RateBasedStatementProperty(
                        aggregate_key_type="IP", limit=2000
                    )
                ),
                visibility_config=_visibility("RatePerIp"),
            ),
            wafv2.CfnWebACL.RuleProperty(
                name="MessageBodySize",
                priority=1,
                action=wafv2.CfnWebACL.RuleActionProperty(block={}),
                statement=wafv2.CfnWebACL.StatementProperty(
                    and_statement=wafv2.CfnWebACL.AndStatementProperty(
                        statements=[
                            wafv2.CfnWebACL.StatementProperty(
                                byte_match_statement=wafv2.CfnWebACL.ByteMatchStatementProperty(
                                    field_to_match=wafv2.CfnWebACL.FieldToMatchProperty(
                                        uri_path={}
                                    ),
                                    positional_constraint="ENDS_WITH",
                                    search_string="/messages",
                                    text_transformations=[
                                        wafv2.CfnWebACL.TextTransformationProperty(
                                            priority=0, type="NONE"
                                        )
                                    ],
                                )
                            ),
                            wafv2.CfnWebACL.StatementProperty(
                                size_constraint_statement=wafv2.CfnWebACL.SizeConstraintStatementProperty(
                                    field_to_match=wafv2.CfnWebACL.FieldToMatchProperty(
                                        body=wafv2.CfnWebACL.BodyProperty(oversize_handling="MATCH")
                                    ),
                                    comparison_operator="GT",
                                    size=WAF_MESSAGE_BODY_LIMIT,
                                    text_transformations=[
                                        wafv2.CfnWebACL.TextTransformationProperty(
                                            priority=0, type="NONE"
                                        )
                                    ],
                                )
                            ),
                        ]
                    )
                ),
                visibility_config=_visibility("MessageBodySize"),
            ),
            wafv2.CfnWebACL.RuleProperty(
                name="KnownBadInputs",
                priority=2,
                override_action=wafv2.CfnWebACL.OverrideActionProperty(none={}),
                statement=wafv2.CfnWebACL.StatementProperty(
                    managed_rule_group_statement=wafv2.CfnWebACL.ManagedRuleGroupStatementProperty(
                        vendor_name="AWS", name="AWSManagedRulesKnownBadInputsRuleSet"
                    )
                ),
                visibility_config=_visibility("KnownBadInputs"),
            ),
        ]
        acl = wafv2.CfnWebACL(
            self,
            "WebAcl",
            scope="REGIONAL",
            default_action=wafv2.CfnWebACL.DefaultActionProperty(allow={}),
            visibility_config=_visibility("ChatApi"),
            rules=rules,
        )
        wafv2.CfnWebACLAssociation(
            self,
            "WebAclAssociation",
            resource_arn=self.rest_api.deployment_stage.stage_arn,
            web_acl_arn=acl.attr_arn,
        )


def _methods(api: apigw.RestApi) -> list[apigw.Method]:
    return [c for c in api.node.find_all() if isinstance(c, apigw.Method)]


def _visibility(metric: str) -> wafv2.CfnWebACL.VisibilityConfigProperty:
    return wafv2.CfnWebACL.VisibilityConfigProperty(
        cloud_watch_metrics_enabled=True, metric_name=metric, sampled_requests_enabled=True
    )
