# IBAC: the requested capability must lie inside the session's Intent.parsed (plus approver extensions, §9.1).
package acs.ibac

import data.acs.lib

cfg := lib.config.ibac

intent := input.session.intent

authorized := {c | some c in intent.effective_capabilities}

# Capabilities granted by an approver for this request only (scope this_request, matching the tool if named).
granted_here contains c if {
	some g in input.session.approvals
	g.scope == "this_request"
	object.get(g, "tool", lib.tool_name) == lib.tool_name
	some c in g.capabilities
}

governed if {
	lib.is_tool_call
	is_array(intent.parsed)
}

mismatch if {
	governed
	lib.capability
	not lib.capability in authorized
	not lib.capability in granted_here
}

strict if intent.scope_mode == "strict"

namespace(c) := split(c, ".")[0]

closest_candidates contains c if {
	some c in authorized
	namespace(c) == namespace(lib.capability)
}

closest_match := sort(closest_candidates)[0] if count(closest_candidates) > 0

default closest_match := null

ibac_data := {
	"requested_capability": lib.capability,
	"closest_match": closest_match,
	"authorized_capabilities": sort(authorized),
	"scope_mode": object.get(intent, "scope_mode", null),
}

# METADATA
# title: Capability outside the session intent
# description: Ask the approver (or the configured disposition) when a tool's capability is not in Intent.parsed.
# custom:
#   policy_id: acs.ibac
#   policy_name: Intent-based access control
#   rule_id: ibac.intent_mismatch
#   reason_code: ibac_intent_mismatch
findings contains {
	"disposition": "ask",
	"reason_code": "ibac_intent_mismatch",
	"reasoning": sprintf("capability %s is outside the session intent", [lib.capability]),
	"policy_id": "acs.ibac",
	"policy_name": "Intent-based access control",
	"rule_id": "ibac.intent_mismatch",
	"paradigm": "ibac",
	"policy_data": ibac_data,
	"ask_details": {
		"approver": cfg.approver,
		"question": sprintf("Allow capability %s (tool %s), which is outside the session intent?", [lib.capability, lib.tool_name]),
		"timeout_seconds": cfg.timeout_seconds,
		"timeout_disposition": "deny",
		"options": ["approve", "deny"],
		"intent_extension": {"capabilities": [lib.capability], "scope": "this_request"},
	},
} if {
	mismatch
	not strict
	cfg.mismatch_disposition == "ask"
}

findings contains {
	"disposition": "deny",
	"reason_code": "ibac_intent_mismatch",
	"reasoning": sprintf("capability %s is outside the session intent", [lib.capability]),
	"policy_id": "acs.ibac",
	"policy_name": "Intent-based access control",
	"rule_id": "ibac.intent_mismatch",
	"paradigm": "ibac",
	"policy_data": ibac_data,
} if {
	mismatch
	not strict
	cfg.mismatch_disposition == "deny"
}

# METADATA
# title: Strict scope mode
# description: Under scope_mode strict a capability outside the intent (or an unknown capability) is denied outright.
# custom:
#   policy_id: acs.ibac
#   policy_name: Intent-based access control
#   rule_id: ibac.scope_mode_strict
#   reason_code: ibac_scope_mode_strict
findings contains {
	"disposition": "deny",
	"reason_code": "ibac_scope_mode_strict",
	"reasoning": sprintf("scope_mode strict: capability %s is outside the session intent", [lib.capability]),
	"policy_id": "acs.ibac",
	"policy_name": "Intent-based access control",
	"rule_id": "ibac.scope_mode_strict",
	"paradigm": "ibac",
	"policy_data": ibac_data,
} if {
	mismatch
	strict
}

findings contains {
	"disposition": "deny",
	"reason_code": "ibac_scope_mode_strict",
	"reasoning": sprintf("scope_mode strict: tool %s has no known capability", [lib.tool_name]),
	"policy_id": "acs.ibac",
	"policy_name": "Intent-based access control",
	"rule_id": "ibac.scope_mode_strict",
	"paradigm": "ibac",
	"policy_data": {"requested_capability": null, "tool": lib.tool_name, "scope_mode": "strict"},
} if {
	governed
	strict
	not lib.capability
}

subagent_excess contains c if {
	input.method == "steps/subagentStart"
	is_array(intent.parsed)
	some c in lib.payload.subagent_intent.parsed
	not c in authorized
}

# METADATA
# title: Subagent intent exceeds the parent's
# custom:
#   policy_id: acs.ibac
#   policy_name: Intent-based access control
#   rule_id: ibac.subagent_intent
#   reason_code: ibac_intent_mismatch
findings contains {
	"disposition": "deny",
	"reason_code": "ibac_intent_mismatch",
	"reasoning": sprintf("subagent intent exceeds the session intent: %s", [concat(", ", sort(subagent_excess))]),
	"policy_id": "acs.ibac",
	"policy_name": "Intent-based access control",
	"rule_id": "ibac.subagent_intent",
	"paradigm": "ibac",
	"policy_data": {"excess_capabilities": sort(subagent_excess), "authorized_capabilities": sort(authorized)},
} if count(subagent_excess) > 0

restated_intent := lib.payload.intent if {
	input.method in {"steps/sessionStart", "steps/agentTrigger"}
	is_object(lib.payload.intent)
}

# METADATA
# title: Intent is immutable
# description: Once established, Intent.parsed changes only through an approver's extension (§8.4); a later step that tries to set a different one is denied.
# custom:
#   policy_id: acs.ibac
#   policy_name: Intent-based access control
#   rule_id: ibac.intent_immutable
#   reason_code: ibac_intent_immutable
findings contains {
	"disposition": "deny",
	"reason_code": "ibac_intent_immutable",
	"reasoning": "the session intent is already established and cannot be changed by a later step",
	"policy_id": "acs.ibac",
	"policy_name": "Intent-based access control",
	"rule_id": "ibac.intent_immutable",
	"paradigm": "ibac",
	"policy_data": {"established_step_id": intent.established_step_id, "attempted_capabilities": sort(attempted_capabilities)},
} if {
	is_object(intent)
	intent.established_step_id != input.params.request_id
	attempted_capabilities != {c | some c in intent.parsed}
}

# Defined only on a step that carries an intent (a comprehension over an undefined value would be empty).
attempted_capabilities := {c | some c in object.get(restated_intent, "parsed", [])} if restated_intent
