# Skills: a skillLoad must match an approved skillRegister for the same (skill_id, digest) and stay inside
# the loading skill's declared composition (hooks.md skillLoad).
package acs.skills

import data.acs.lib

registered := input.session.skills.registered

skill_id := lib.payload.skill_id

normalise_digest(d) := concat(":", [replace(lower(d.algorithm), "-", ""), lower(d.value)]) if is_object(d)

normalise_digest(d) := concat(":", [replace(lower(parts[0]), "-", ""), lower(concat(":", array.slice(parts, 1, count(parts))))]) if {
	is_string(d)
	parts := split(d, ":")
	count(parts) >= 2
}

normalise_digest(d) := lower(d) if {
	is_string(d)
	not contains(d, ":")
}

load_digest := normalise_digest(lib.payload.digest)

problems contains "skill was never registered" if {
	input.method == "steps/skillLoad"
	not registered[skill_id]
}

problems contains "skill registration was not approved" if {
	input.method == "steps/skillLoad"
	registered[skill_id].approved == false
}

problems contains "load carries no digest" if {
	input.method == "steps/skillLoad"
	registered[skill_id]
	not load_digest
}

problems contains "digest differs from the approved registration" if {
	input.method == "steps/skillLoad"
	reg := registered[skill_id]
	load_digest != reg.digest
}

# The loading skill is the entry before this one in load_path (root first).
parent_skill := lib.payload.load_path[count(lib.payload.load_path) - 2].skill_id if count(lib.payload.load_path) >= 2

problems contains sprintf("skill %s does not declare %s in composed_skills", [parent_skill, skill_id]) if {
	input.method == "steps/skillLoad"
	parent := registered[parent_skill]
	not skill_id in object.get(parent, "composed_skills", [])
}

problems contains sprintf("loading skill %s is not registered", [parent_skill]) if {
	input.method == "steps/skillLoad"
	not registered[parent_skill]
}

# METADATA
# title: Unverifiable skill load
# description: Deny a skillLoad that cannot be tied to an approved registration with the same digest, or that breaks composition.
# custom:
#   policy_id: acs.skills
#   policy_name: Skill lifecycle
#   rule_id: skills.unverifiable
#   reason_code: skill_unverifiable
findings contains {
	"disposition": "deny",
	"reason_code": "skill_unverifiable",
	"reasoning": sprintf("skill %s: %s", [skill_id, concat("; ", sort(problems))]),
	"policy_id": "acs.skills",
	"policy_name": "Skill lifecycle",
	"rule_id": "skills.unverifiable",
	"paradigm": "skills",
	"policy_data": {"skill_id": skill_id, "problems": sort(problems)},
} if {
	lib.config.skills.require_registration
	count(problems) > 0
}
