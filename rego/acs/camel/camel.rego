# CaMeL dependency graph: each planned argument may only depend on data from the origins its plan allows.
package acs.camel

import data.acs.lib

plan := lib.config.camel.plans[lib.tool_name]

# Every provenance node an argument depends on: itself and its transitive lineage.
nodes(pid) := array.concat([pid], lib.lineage(pid))

violations contains {"argument": name, "provenance_id": node, "origin": origin} if {
	lib.is_native_tool_call
	some name, rule in plan
	pid := lib.argument_provenance[name]
	some node in nodes(pid)
	origin := node_origin(node)
	not origin in object.get(rule, "allowed_origins", [])
}

# A node's recorded origin, "unknown" without one. Read through `records[node].origin`, not the whole
# records object, so the engine sends each record's origin only (manifest input_paths).
node_origin(node) := o if o := lib.origin_of(node)

else := "unknown"

# An argument the plan constrains but whose provenance is missing cannot be checked: fail closed.
violations contains {"argument": name, "provenance_id": null, "origin": "missing"} if {
	lib.is_native_tool_call
	some name, _ in plan
	lib.argument_values[name]
	not lib.argument_provenance[name]
}

# METADATA
# title: Dependency graph violation
# description: Deny when a planned tool argument depends on data from an origin its plan does not allow; cite the offending nodes.
# custom:
#   policy_id: acs.camel
#   policy_name: CaMeL dependency graph
#   rule_id: camel.dependency_graph
#   reason_code: camel_dependency_graph_violation
findings contains {
	"disposition": "deny",
	"reason_code": "camel_dependency_graph_violation",
	"reasoning": sprintf("tool %s: arguments %s depend on data outside the plan", [lib.tool_name, concat(", ", sort({v.argument | some v in violations}))]),
	"policy_id": "acs.camel",
	"policy_name": "CaMeL dependency graph",
	"rule_id": "camel.dependency_graph",
	"paradigm": "camel",
	"policy_data": {"tool": lib.tool_name, "violations": sort([v | some v in violations])},
	"cited_provenance_ids": sort({v.provenance_id | some v in violations; is_string(v.provenance_id)}),
} if count(violations) > 0
