"""The chat API's web application firewall, as its own piece (like aws-lambda-handler-cookbook's
waf_construct.py): a web ACL with a per-IP rate limit, a size limit on message bodies and AWS's
known-bad-inputs rules, associated with the API's stage. On for chatmemory:stage=prod or
chatmemory:waf=true.

`ApiWaf` is built into the API construct's scope, not a construct of its own: the web ACL and its
association keep the construct paths, and so the logical ids, of the stacks deployed before
stacks/api.py was split (a renamed construct is a replaced resource: CloudFormation would
create a second association for the same stage before deleting the first).
"""

from __future__ import annotations

from aws_cdk import aws_apigateway as apigw
from aws_cdk import aws_wafv2 as wafv2
from constructs import Construct

# A chat message is at most MAX_INPUT_CHARS characters (32,000 by default; the Lambda enforces
# that exactly). The WAF inspects up to 64 KB of an API Gateway body (16 KB unless the web ACL
# raises it, as here; bodies over 16 KB are billed per extra 16 KB inspected) and blocks chat
# message bodies beyond that, long before Lambda runs: 32,000 characters of any script up to 2
# bytes a character in UTF-8 (Latin, Greek, Cyrillic, Arabic, Hebrew...) fit; a message of
# mostly 3- or 4-byte characters (CJK, emoji) fits up to about 21,000 or 16,000 characters with
# the WAF on. Stored turns (POST /turns) are not in this rule: the Lambda bounds them.
WAF_MESSAGE_BODY_LIMIT = 64 * 1024


class ApiWaf:
    """A regional web ACL (`web_acl`) and its association with `stage`."""

    def __init__(self, scope: Construct, *, stage: apigw.Stage) -> None:
        self.web_acl = wafv2.CfnWebACL(
            scope,
            "WebAcl",
            scope="REGIONAL",
            default_action=wafv2.CfnWebACL.DefaultActionProperty(allow={}),
            visibility_config=_visibility("ChatApi"),
            rules=_rules(),
            association_config=wafv2.CfnWebACL.AssociationConfigProperty(
                request_body={
                    "API_GATEWAY": wafv2.CfnWebACL.RequestBodyAssociatedResourceTypeConfigProperty(
                        default_size_inspection_limit="KB_64"
                    )
                }
            ),
        )
        self.association = wafv2.CfnWebACLAssociation(
            scope,
            "WebAclAssociation",
            resource_arn=stage.stage_arn,
            web_acl_arn=self.web_acl.attr_arn,
        )


def _rules() -> list[wafv2.CfnWebACL.RuleProperty]:
    return [
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
                                field_to_match=wafv2.CfnWebACL.FieldToMatchProperty(uri_path={}),
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


def _visibility(metric: str) -> wafv2.CfnWebACL.VisibilityConfigProperty:
    return wafv2.CfnWebACL.VisibilityConfigProperty(
        cloud_watch_metrics_enabled=True, metric_name=metric, sampled_requests_enabled=True
    )
