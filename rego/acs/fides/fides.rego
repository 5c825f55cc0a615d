# FIDES information-flow control: untrusted-lineage data must not flow into a consequential action (P-T).
package acs.fides

import data.acs.lib

# Arguments whose own provenance or any ancestor in its lineage is not trusted (§7.2, monotonic lineage).
violations contains {"argument": name, "path": lib.argument_pointer(name), "provenance_id": pid} if {
	lib.is_native_tool_call
	lib.consequential
	some name, pid in lib.argument_provenance
	lib.untrusted(pid)
}

default capability_label := "action"

capability_label := lib.capability

# Built once: the reasoning and policy_data both use it.
argument_paths := sort([v.path | some v in violations])

cited contains pid if {
	some v in violations
	pid := v.provenance_id
}

cited contains a if {
	some v in violations
	some a in lib.lineage(v.provenance_id)
	lib.untrusted(a)
}

# METADATA
# title: Untrusted data into a consequential action
# description: Deny when an argument of a consequential tool call has untrusted lineage; cite the lineage and the argument path.
# custom:
#   policy_id: acs.fides
#   policy_name: FIDES information-flow control
#   rule_id: fides.p_t
#   reason_code: fides_p_t_violation
findings contains {
	"disposition": "deny",
	"reason_code": "fides_p_t_violation",
	"extra_reason_codes": ["untrusted_into_consequential"],
	"reasoning": sprintf("untrusted data flows into consequential %s (tool %s) via %s", [capability_label, lib.tool_name, concat(", ", argument_paths)]),
	"policy_id": "acs.fides",
	"policy_name": "FIDES information-flow control",
	"rule_id": "fides.p_t",
	"paradigm": "fides",
	"policy_data": {
		"argument_paths": argument_paths,
		"tool": lib.tool_name,
		"violations": sort([v | some v in violations]),
	},
	"cited_provenance_ids": sort(cited),
} if count(violations) > 0
