# The ACS decision: combines every module's findings. Precedence deny > defer > ask > modify > allow;
# modifications are merged and checked for §6.3 disjointness; every contributing rule is cited in
# policy_references; policy_data is keyed by paradigm. Entrypoint: acs/decision.
package acs

import data.acs.aarm
import data.acs.approvals
import data.acs.baseline
import data.acs.budgets
import data.acs.camel
import data.acs.fides
import data.acs.ibac
import data.acs.inventory
import data.acs.pii
import data.acs.skills

# Every module's findings but PII's: one set filled from each module (eight chained unions built and copied
# seven intermediate sets).
module_findings contains f if some f in baseline.findings

module_findings contains f if some f in ibac.findings

module_findings contains f if some f in fides.findings

module_findings contains f if some f in aarm.findings

module_findings contains f if some f in camel.findings

module_findings contains f if some f in budgets.findings

module_findings contains f if some f in skills.findings

module_findings contains f if some f in approvals.findings

module_findings contains f if some f in inventory.findings

module_denies if {
	some f in module_findings
	f.disposition == "deny"
}

# PII's deny finding. When another module denies, the PII pipeline would run for it alone: the module then
# looks for deny-category matches only (pii.deny_findings_if_candidate, the same set). Otherwise the pipeline
# runs for the redaction anyway.
pii_deny_findings := pii.deny_findings_if_candidate if module_denies

else := pii.deny_findings

# PII redaction's finding is always a modify, so it is looked at (and its redaction pipeline runs) only when
# no deny, defer or ask finding outranks it.
findings_but_redaction contains f if some f in module_findings

findings_but_redaction contains f if some f in pii_deny_findings

findings contains f if some f in findings_but_redaction

findings contains f if some f in pii.modify_findings

# The strongest disposition among the findings (a finding with an unknown disposition counts for none):
# one existence check per disposition, strongest first, instead of a set of ranks and two lookup tables.
chosen := "deny" if has_disposition("deny")

else := "defer" if has_disposition("defer")

else := "ask" if has_disposition("ask")

else := "modify" if has_disposition("modify")

else := "modify" if redaction_modifies

else := "allow"

has_disposition(d) if {
	some f in findings_but_redaction
	f.disposition == d
}

redaction_modifies if {
	some f in pii.modify_findings
	f.disposition == "modify"
}

# A finding outside findings_but_redaction is a modify: for any other disposition the smaller set gives the same.
contributing := {f | some f in findings; f.disposition == chosen} if chosen == "modify"

else := {f | some f in findings_but_redaction; f.disposition == chosen}

# ---- modifications (§6.3) -------------------------------------------------------------------------------

modify_findings := {f | some f in findings; f.disposition == "modify"}

redactions := {r | some f in modify_findings; some r in object.get(f.modifications, "redactions", [])}

override_keys := {k | some f in modify_findings; some k, _ in object.get(f.modifications, "parameter_overrides", {})}

override_value(k) := sort([v | some f in modify_findings; v := f.modifications.parameter_overrides[k]])[0]

overrides := {k: override_value(k) | some k in override_keys}

contents := {c | some f in modify_findings; c := f.modifications.modified_content}

override_prefix := "/params/arguments/" if startswith(input.method, "protocols/MCP/")

override_prefix := "/params/arguments/" if startswith(input.method, "wrapped:mcp")

default override_prefix := "/arguments/"

targets := array.concat(
	[r.path | some r in redactions],
	[concat("", [override_prefix, replace(replace(k, "~", "~0"), "/", "~1")]) | some k in override_keys],
)

overlaps(a, b) if a == b

overlaps(a, _) if a == ""

overlaps(_, b) if b == ""

overlaps(a, b) if startswith(b, concat("", [a, "/"]))

modification_conflict if {
	some i, a in targets
	some j, b in targets
	i != j
	overlaps(a, b)
}

# modified_content replaces the whole message: it cannot be combined with anything else (§6.3).
modification_conflict if {
	count(contents) > 0
	count(targets) > 0
}

modification_conflict if count(contents) > 1

merged_modifications := {"modified_content": c} if {
	count(contents) == 1
	some c in contents
}

merged_modifications := {"redactions": sort(redactions), "parameter_overrides": overrides} if {
	count(contents) == 0
	count(redactions) > 0
	count(override_keys) > 0
}

merged_modifications := {"redactions": sort(redactions)} if {
	count(contents) == 0
	count(redactions) > 0
	count(override_keys) == 0
}

merged_modifications := {"parameter_overrides": overrides} if {
	count(contents) == 0
	count(redactions) == 0
	count(override_keys) > 0
}

# ---- capability downgrades (§6.5, §9.2) and conflicts ------------------------------------------------

downgrade := {"decision": "deny", "code": "modification_conflict", "why": "policies produced overlapping modifications"} if {
	chosen == "modify"
	modification_conflict
}

downgrade := {"decision": "allow", "code": "modify_unsupported", "why": "client cannot apply modifications; postCompact is never denied"} if {
	chosen == "modify"
	not modification_conflict
	not input.client.modify_capable
	input.method == "steps/postCompact"
}

downgrade := {"decision": "deny", "code": "modify_unsupported", "why": "client cannot apply the required modifications"} if {
	chosen == "modify"
	not modification_conflict
	not input.client.modify_capable
	input.method != "steps/postCompact"
}

downgrade := {"decision": "deny", "code": "approver_unavailable", "why": "client cannot relay an approval request"} if {
	chosen == "ask"
	not input.client.ask_capable
}

default final := "allow"

final := chosen if not downgrade

final := downgrade.decision

# ---- assembling the answer ---------------------------------------------------------------------------

contributing_reason_codes := {c | some f in contributing; c := f.reason_code} | {c | some f in contributing; some c in object.get(f, "extra_reason_codes", [])}

reason_codes := sort(contributing_reason_codes | {downgrade.code}) if downgrade

reason_codes := sort(contributing_reason_codes) if not downgrade

reference(f) := {"policy_id": f.policy_id, "policy_name": f.policy_name, "rule_id": f.rule_id}

policy_references := sort({reference(f) | some f in contributing}) if count(contributing) > 0

policy_references := [{"policy_id": "acs.decision", "policy_name": "ACS decision", "rule_id": "decision.default_allow"}] if count(contributing) == 0

paradigms := {f.paradigm | some f in contributing}

paradigm_keys(p) := {k | some f in contributing; f.paradigm == p; some k, _ in f.policy_data}

paradigm_value(p, k) := sort([v | some f in contributing; f.paradigm == p; v := f.policy_data[k]])[0]

# Usually each contributing finding has its own paradigm and an object policy_data: that object is the
# paradigm's entry as is (the key-by-key merge below gives the same), without a scan and sort per key.
policy_data := {f.paradigm: f.policy_data | some f in contributing} if {
	count(paradigms) == count(contributing)
	not non_object_policy_data
} else := {p: {k: paradigm_value(p, k) | some k in paradigm_keys(p)} | some p in paradigms}

non_object_policy_data if {
	some f in contributing
	not is_object(object.get(f, "policy_data", null))
}

cited_provenance_ids := sort({id | some f in contributing; some id in object.get(f, "cited_provenance_ids", [])})

reasonings := sort([f.reasoning | some f in contributing])

reasoning := concat("; ", array.concat(reasonings, [downgrade.why])) if downgrade

reasoning := concat("; ", reasonings) if {
	not downgrade
	count(reasonings) > 0
}

reasoning := "no policy objected" if {
	not downgrade
	count(reasonings) == 0
}

# Called for ask and defer only, which no redaction finding has.
first_by_rule(disp) := [f | some id in sort({g.rule_id | some g in findings_but_redaction; g.disposition == disp}); some f in findings_but_redaction; f.disposition == disp; f.rule_id == id][0]

decision := {
	"decision": final,
	"reasoning": reasoning,
	"reason_codes": reason_codes,
	"policy_references": policy_references,
	"policy_data": policy_data,
	"cited_provenance_ids": cited_provenance_ids,
	"modifications": merged_modifications,
} if final == "modify"

decision := {
	"decision": final,
	"reasoning": reasoning,
	"reason_codes": reason_codes,
	"policy_references": policy_references,
	"policy_data": policy_data,
	"cited_provenance_ids": cited_provenance_ids,
	"ask_details": first_by_rule("ask").ask_details,
} if final == "ask"

decision := {
	"decision": final,
	"reasoning": reasoning,
	"reason_codes": reason_codes,
	"policy_references": policy_references,
	"policy_data": policy_data,
	"cited_provenance_ids": cited_provenance_ids,
	"defer_details": first_by_rule("defer").defer_details,
} if final == "defer"

decision := {
	"decision": final,
	"reasoning": reasoning,
	"reason_codes": reason_codes,
	"policy_references": policy_references,
	"policy_data": policy_data,
	"cited_provenance_ids": cited_provenance_ids,
} if final in {"allow", "deny"}
