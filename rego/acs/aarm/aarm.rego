# AARM cumulative context: no consequential action within N turns after untrusted data entered the session.
package acs.aarm

import data.acs.lib

cfg := lib.config.aarm

latest := input.session.taint.latest_untrusted

earliest := input.session.taint.earliest_untrusted

# Turns since untrusted data last entered (0 = this turn).
lookback_distance := input.session.turn.index - latest.turn_index

tainted if {
	lib.is_tool_call
	lib.consequential
	is_object(latest)
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
		"earliest_untrusted_step_id": earliest.step_id,
		"latest_untrusted_step_id": latest.step_id,
		"untrusted_steps": input.session.taint.untrusted_steps,
	},
	"cited_provenance_ids": sort({earliest.provenance_id, latest.provenance_id}),
} if tainted
