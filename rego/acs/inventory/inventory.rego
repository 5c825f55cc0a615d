# Inventory (ACS Inspect): decisions on the session's AgBOM (input.agbom, docs/agbom.md). A snapshot or hot-swap
# whose components are banned or off an allow list is denied ("Guardians MAY return deny to refuse a session whose
# component graph contains a banned component, or to block a hot-swap"), as is one the Guardian cannot reconcile
# with its own view (agbom_hash mismatch, a diff that does not apply, missing registration_provenance under
# ACS-Provenance), and a content-bearing step of an Inspect session before its agbom/snapshot.
package acs.inventory

import data.acs.lib

cfg := object.get(lib.config, "inventory", {})

# input.agbom, else {} (object.get(input, …) would read the whole input, and the engine then sends policies all of it).
default agbom := {}

agbom := input.agbom

proposed := object.get(agbom, "proposed", null)

# The components a step brings: the whole proposed AgBOM on agbom/* steps.
incoming contains c if {
	startswith(input.method, "agbom/")
	is_object(proposed)
	some c in proposed.components
}

# An entry matches a component when every member it names is equal ("id", "type", "name", "provider", "version",
# "endpoint"), or, for a member ending in "_prefix", when the component's member starts with it.
matches(entry, c) if {
	every k, v in entry {
		member_matches(k, v, c)
	}
}

member_matches(k, v, c) if {
	not endswith(k, "_prefix")
	object.get(c, k, null) == v
}

member_matches(k, v, c) if {
	endswith(k, "_prefix")
	value := object.get(c, trim_suffix(k, "_prefix"), null)
	is_string(value)
	startswith(value, v)
}

banned contains c.id if {
	some c in incoming
	some entry in object.get(cfg, "banned", [])
	matches(entry, c)
}

# An allow list for a type (cfg.allowed[type]) admits only the components of that type it matches.
not_allowed contains c.id if {
	some c in incoming
	list := object.get(object.get(cfg, "allowed", {}), c.type, null)
	is_array(list)
	not allowed_by(list, c)
}

allowed_by(list, c) if {
	some entry in list
	matches(entry, c)
}

# Component types that may not change once the session has an AgBOM (cfg.frozen_types): a hot-swap of one of them.
swapped contains c.id if {
	agbom.current != null
	frozen := {t | some t in object.get(cfg, "frozen_types", [])}
	change := proposed.change
	some c in array.concat(change.added, [x | some x in change.removed])
	c.type in frozen
}

swapped contains ch.id if {
	agbom.current != null
	frozen := {t | some t in object.get(cfg, "frozen_types", [])}
	some ch in proposed.change.changed
	ch.to.type in frozen
}

problem_codes := {p.code | some p in proposed.problems} if is_object(proposed)

# Steps that may come before the snapshot: the session's opening and the steps that cannot be denied anyway.
before_snapshot_methods := {
	"steps/sessionStart",
	"steps/sessionEnd",
	"steps/subagentStop",
	"steps/turnEnd",
	"steps/skillUnload",
	"steps/postCompact",
}

snapshot_missing if {
	object.get(cfg, "require_snapshot", true)
	agbom.negotiated == true
	agbom.current == null
	not startswith(input.method, "agbom/")
	not input.method in before_snapshot_methods
}

# METADATA
# title: AgBOM the Guardian cannot reconcile
# description: Deny an agbom/* step whose AgBOM does not hash or apply as reported, or lacks registration_provenance under ACS-Provenance.
# custom:
#   policy_id: acs.inventory
#   policy_name: Inventory
#   rule_id: inventory.integrity
#   reason_code: agbom_invalid
findings contains {
	"disposition": "deny",
	"reason_code": "agbom_invalid",
	"extra_reason_codes": sort(problem_codes),
	"reasoning": concat("; ", sort({p.detail | some p in proposed.problems})),
	"policy_id": "acs.inventory",
	"policy_name": "Inventory",
	"rule_id": "inventory.integrity",
	"paradigm": "inventory",
	"policy_data": {"problems": proposed.problems},
} if {
	startswith(input.method, "agbom/")
	count(problem_codes) > 0
}

# METADATA
# title: Banned component
# description: Deny an AgBOM that contains a component matching an entry of inventory.banned.
# custom:
#   policy_id: acs.inventory
#   policy_name: Inventory
#   rule_id: inventory.banned_component
#   reason_code: agbom_component_banned
findings contains {
	"disposition": "deny",
	"reason_code": "agbom_component_banned",
	"reasoning": sprintf("banned component(s) in the AgBOM: %s", [concat(", ", sort(banned))]),
	"policy_id": "acs.inventory",
	"policy_name": "Inventory",
	"rule_id": "inventory.banned_component",
	"paradigm": "inventory",
	"policy_data": {"components": sort(banned)},
} if count(banned) > 0

# METADATA
# title: Component not on the allow list
# description: Deny an AgBOM with a component of a type that has an allow list (inventory.allowed) it does not match.
# custom:
#   policy_id: acs.inventory
#   policy_name: Inventory
#   rule_id: inventory.not_allowed
#   reason_code: agbom_component_not_allowed
findings contains {
	"disposition": "deny",
	"reason_code": "agbom_component_not_allowed",
	"reasoning": sprintf("component(s) not on the allow list: %s", [concat(", ", sort(not_allowed))]),
	"policy_id": "acs.inventory",
	"policy_name": "Inventory",
	"rule_id": "inventory.not_allowed",
	"paradigm": "inventory",
	"policy_data": {"components": sort(not_allowed)},
} if count(not_allowed) > 0

# METADATA
# title: Hot-swap of a frozen component type
# description: Deny an AgBOM change that adds, removes or changes a component of a type in inventory.frozen_types.
# custom:
#   policy_id: acs.inventory
#   policy_name: Inventory
#   rule_id: inventory.hot_swap
#   reason_code: agbom_hot_swap_denied
findings contains {
	"disposition": "deny",
	"reason_code": "agbom_hot_swap_denied",
	"reasoning": sprintf("mid-session change of frozen component(s): %s", [concat(", ", sort(swapped))]),
	"policy_id": "acs.inventory",
	"policy_name": "Inventory",
	"rule_id": "inventory.hot_swap",
	"paradigm": "inventory",
	"policy_data": {"components": sort(swapped)},
} if count(swapped) > 0

# METADATA
# title: Content before the AgBOM snapshot
# description: Deny a content-bearing step of a session that negotiated ACS-Inspect before its agbom/snapshot.
# custom:
#   policy_id: acs.inventory
#   policy_name: Inventory
#   rule_id: inventory.snapshot_missing
#   reason_code: agbom_snapshot_missing
findings contains {
	"disposition": "deny",
	"reason_code": "agbom_snapshot_missing",
	"reasoning": sprintf("%s arrived before the session's agbom/snapshot (ACS-Inspect)", [input.method]),
	"policy_id": "acs.inventory",
	"policy_name": "Inventory",
	"rule_id": "inventory.snapshot_missing",
	"paradigm": "inventory",
	"policy_data": {"method": input.method},
} if snapshot_missing
