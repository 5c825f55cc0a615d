package acs.skills_test

import data.acs.skills
import data.acs.testlib

empty_prov := {"trust": {}, "lineage": {}, "records": {}}

registry := {"registered": {
	"pdf": {"digest": "sha256:abc", "approved": true, "composed_skills": ["ocr"], "declared_capabilities": []},
	"ocr": {"digest": "sha256:def", "approved": true, "composed_skills": [], "declared_capabilities": []},
	"bad": {"digest": "sha256:999", "approved": false, "composed_skills": [], "declared_capabilities": []},
}, "loaded": []}

load(skill, digest, path) := testlib.step("steps/skillLoad", {"skill_id": skill, "digest": digest, "load_trigger": "user", "load_path": path}, testlib.session(empty_prov, testlib.no_taint, 1, testlib.base_counters, registry), testlib.client_full)

test_load_matching_approved_registration_passes if {
	fs := skills.findings with input as load("pdf", {"algorithm": "SHA-256", "value": "ABC"}, [{"skill_id": "pdf"}])
	count(fs) == 0
}

test_unregistered_skill_is_unverifiable if {
	fs := skills.findings with input as load("nope", {"algorithm": "sha256", "value": "abc"}, [{"skill_id": "nope"}])
	some f in fs
	f.reason_code == "skill_unverifiable"
	f.policy_data.problems == ["skill was never registered"]
}

test_digest_mismatch_is_unverifiable if {
	fs := skills.findings with input as load("pdf", {"algorithm": "sha256", "value": "abd"}, [{"skill_id": "pdf"}])
	some f in fs
	f.policy_data.problems == ["digest differs from the approved registration"]
}

test_denied_registration_is_unverifiable if {
	fs := skills.findings with input as load("bad", {"algorithm": "sha256", "value": "999"}, [{"skill_id": "bad"}])
	count(fs) == 1
}

test_composition_is_enforced if {
	ok := skills.findings with input as load("ocr", {"algorithm": "sha256", "value": "def"}, [{"skill_id": "pdf"}, {"skill_id": "ocr"}])
	count(ok) == 0
	bad := skills.findings with input as load("pdf", {"algorithm": "sha256", "value": "abc"}, [{"skill_id": "ocr"}, {"skill_id": "pdf"}])
	some f in bad
	f.policy_data.problems == ["skill ocr does not declare pdf in composed_skills"]
}
