package acs.inventory_test

import data.acs
import data.acs.inventory
import data.acs.testlib

gpt := {"id": "m1", "type": "model", "name": "gpt-4o", "version": "2024-08-06", "provider": "openai", "endpoint": "https://api.openai.com/v1", "model_fields": {"context_window": 128000}}

llama := {"id": "m2", "type": "model", "name": "llama", "version": "3", "provider": "meta", "endpoint": "https://llm.internal/v1", "model_fields": {"context_window": 8192}}

db_mcp := {"id": "urn:mcp:db", "type": "mcp_server", "name": "db-mcp", "version": "1.4.0", "endpoint": "https://mcp.internal/db", "mcp_server_fields": {"tools": []}}

components(list) := {c.id: c | some c in list}

proposal(list, change, problems) := {"agent_id": "agent-1", "agbom_hash": "h", "seq": null, "components": components(list), "form": "full", "reported_hash": null, "problems": problems, "change": change}

no_change := {"added": [], "removed": [], "changed": []}

agbom_step(method, current, proposed) := object.union(testlib.step(method, {}, testlib.empty_session, testlib.client_full), {"agbom": {"negotiated": true, "dynamic": true, "current": current, "proposed": proposed}})

current_doc := {"agent_id": "agent-1", "agbom_hash": "h0", "seq": 1, "components": components([gpt])}

cfg(extra) := object.union(data.acs_config, {"inventory": object.union({"require_snapshot": true, "banned": [], "allowed": {}, "frozen_types": []}, extra)})

test_clean_snapshot_is_allowed if {
	fs := inventory.findings with input as agbom_step("agbom/snapshot", null, proposal([gpt, db_mcp], {"added": [gpt, db_mcp], "removed": [], "changed": []}, []))
		with data.acs_config as cfg({})
	count(fs) == 0
}

test_banned_provider_is_denied if {
	d := acs.decision with input as agbom_step("agbom/snapshot", null, proposal([gpt, llama], no_change, []))
		with data.acs_config as cfg({"banned": [{"type": "model", "provider": "meta"}]})
	d.decision == "deny"
	d.reason_codes == ["agbom_component_banned"]
	d.policy_data.inventory.components == ["m2"]
}

test_endpoint_prefix_ban if {
	fs := inventory.findings with input as agbom_step("agbom/snapshot", null, proposal([db_mcp], no_change, []))
		with data.acs_config as cfg({"banned": [{"endpoint_prefix": "https://mcp.internal/"}]})
	some f in fs
	f.rule_id == "inventory.banned_component"
}

test_model_allow_list if {
	fs := inventory.findings with input as agbom_step("agbom/snapshot", null, proposal([gpt, llama, db_mcp], no_change, []))
		with data.acs_config as cfg({"allowed": {"model": [{"provider": "openai", "name": "gpt-4o"}]}})
	some f in fs
	f.reason_code == "agbom_component_not_allowed"
	f.policy_data.components == ["m2"]
	count(fs) == 1
}

test_hot_swap_of_frozen_type_is_denied if {
	change := {"added": [], "removed": [], "changed": [{"id": "m1", "from": gpt, "to": object.union(gpt, {"version": "2025-01-01"})}]}
	d := acs.decision with input as agbom_step("agbom/changed", current_doc, proposal([object.union(gpt, {"version": "2025-01-01"})], change, []))
		with data.acs_config as cfg({"frozen_types": ["model"]})
	d.decision == "deny"
	d.reason_codes == ["agbom_hot_swap_denied"]
}

test_hot_swap_of_other_type_is_allowed if {
	change := {"added": [db_mcp], "removed": [], "changed": []}
	d := acs.decision with input as agbom_step("agbom/changed", current_doc, proposal([gpt, db_mcp], change, []))
		with data.acs_config as cfg({"frozen_types": ["model"]})
	d.decision == "allow"
}

test_integrity_problems_deny_with_their_codes if {
	problems := [{"code": "agbom_hash_mismatch", "detail": "reported x is not y"}]
	d := acs.decision with input as agbom_step("agbom/snapshot", null, proposal([gpt], no_change, problems))
		with data.acs_config as cfg({})
	d.decision == "deny"
	d.reason_codes == ["agbom_hash_mismatch", "agbom_invalid"]
}

test_content_before_snapshot_is_denied if {
	i := object.union(testlib.tool_call("bash", {}), {"agbom": {"negotiated": true, "dynamic": false, "current": null}})
	d := acs.decision with input as i with data.acs_config as cfg({})
	d.decision == "deny"
	"agbom_snapshot_missing" in d.reason_codes
}

test_session_start_before_snapshot_is_not_refused if {
	i := object.union(testlib.step("steps/sessionStart", {}, testlib.empty_session, testlib.client_full), {"agbom": {"negotiated": true, "dynamic": false, "current": null}})
	fs := inventory.findings with input as i with data.acs_config as cfg({})
	count(fs) == 0
}

test_no_snapshot_needed_without_inspect if {
	i := object.union(testlib.tool_call("bash", {}), {"agbom": {"negotiated": false, "dynamic": false, "current": null}})
	fs := inventory.findings with input as i with data.acs_config as cfg({})
	count(fs) == 0
}

test_snapshot_requirement_can_be_switched_off if {
	i := object.union(testlib.tool_call("bash", {}), {"agbom": {"negotiated": true, "dynamic": false, "current": null}})
	fs := inventory.findings with input as i with data.acs_config as cfg({"require_snapshot": false})
	count(fs) == 0
}
