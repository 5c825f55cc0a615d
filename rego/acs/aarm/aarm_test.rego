package acs.aarm_test

import data.acs.aarm
import data.acs.testlib

taint_at(turn) := {
	"earliest_untrusted": {"step_id": "s-early", "provenance_id": "w0", "turn_index": 1, "origin": "retrieved"},
	"latest_untrusted": {"step_id": "s-late", "provenance_id": "w1", "turn_index": turn, "origin": "retrieved"},
	"untrusted_steps": 2,
}

empty_prov := {"trust": {}, "lineage": {}, "records": {}}

test_consequential_action_right_after_taint_is_denied if {
	s := testlib.session(empty_prov, taint_at(3), 4, testlib.base_counters, testlib.no_skills)
	fs := aarm.findings with input as testlib.tool_call_in("shell", {}, s)
	some f in fs
	f.reason_code == "aarm_cumulative_taint"
	f.policy_data.lookback_distance == 1
	f.policy_data.lookback_turns == 2
	f.policy_data.earliest_untrusted_step_id == "s-early"
	f.cited_provenance_ids == ["w0", "w1"]
}

test_taint_outside_lookback_passes if {
	s := testlib.session(empty_prov, taint_at(1), 4, testlib.base_counters, testlib.no_skills)
	fs := aarm.findings with input as testlib.tool_call_in("shell", {}, s)
	count(fs) == 0
}

test_lookback_is_configurable if {
	s := testlib.session(empty_prov, taint_at(1), 4, testlib.base_counters, testlib.no_skills)
	fs := aarm.findings with input as testlib.tool_call_in("shell", {}, s) with data.acs_config.aarm.lookback_turns as 5
	count(fs) == 1
}

test_no_taint_passes if {
	s := testlib.session(empty_prov, testlib.no_taint, 4, testlib.base_counters, testlib.no_skills)
	fs := aarm.findings with input as testlib.tool_call_in("shell", {}, s)
	count(fs) == 0
}

test_non_consequential_action_passes if {
	s := testlib.session(empty_prov, taint_at(4), 4, testlib.base_counters, testlib.no_skills)
	fs := aarm.findings with input as testlib.tool_call_in("read_file", {}, s)
	count(fs) == 0
}
