# AARM cumulative context: no consequential action within N turns after untrusted data entered the session.
package acs.aarm

import data.acs.lib

cfg := lib.config.aarm

# The taint records are read member by member (no alias of the whole object), so the engine sends only
# these members (manifest input_paths).
latest_turn_index := input.session.taint.latest_untrusted.turn_index

# Turns since untrusted data last entered (0 = this turn). Undefined unless latest_untrusted is an object
# with a turn index, so it also stands for "untrusted data has entered".
lookback_distance := input.session.turn.index - latest_turn_index

tainted if {
	lib.is_tool_call
	lib.consequential
	lookback_distance < cfg.lookback_turns
}

# METADATA
# title: Cumulative taint
# description: Deny a consequential action while untrusted data entered within the last lookback_turns turns; cite the earliest untrusted step's provenance.
# custom:
#   policy_id: acs.aarm
#   policy_name: AARM cumulative context
#   rule_id: aarm.cumulative_taint
#   reason_code: aarm_cumulative_taint
findings contains {
	"disposition": "deny",
	"reason_code": "aarm_cumulative_taint",
	"reasoning": sprintf("consequential action %d turn(s) after untrusted data entered (lookback %d)", [lookback_distance, cfg.lookback_turns]),
	"policy_id": "acs.aarm",
	"policy_name": "AARM cumulative context",
	"rule_id": "aarm.cumulative_taint",
	"paradigm": "aarm",
	"policy_data": {
		"lookback_distance": lookback_distance,
		"lookback_turns": cfg.lookback_turns,
		"earliest_untrusted_step_id": input.session.taint.earliest_untrusted.step_id,
		"latest_untrusted_step_id": input.session.taint.latest_untrusted.step_id,
		"untrusted_steps": input.session.taint.untrusted_steps,
	},
	"cited_provenance_ids": sort({input.session.taint.earliest_untrusted.provenance_id, input.session.taint.latest_untrusted.provenance_id}),
} if tainted
