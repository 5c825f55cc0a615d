package acs.pii_test

import data.acs.pii
import data.acs.testlib

user_message(text) := testlib.step("steps/userMessage", {"content": [{"type": "text", "value": text, "provenance": testlib.prov("u1", "user_input")}]}, testlib.empty_session, testlib.client_full)

test_email_is_redacted_in_place if {
	fs := pii.findings with input as user_message("write to alice@example.com today")
	some f in fs
	f.disposition == "modify"
	f.reason_code == "pii_detected"
	f.modifications.redactions == [{"path": "/content/0/value", "replacement": "write to [REDACTED:email] today"}]
}

test_luhn_valid_card_is_redacted if {
	fs := pii.findings with input as user_message("card 4111 1111 1111 1111 please")
	some f in fs
	"credit_card" in f.policy_data.categories
	f.modifications.redactions[0].replacement == "card [REDACTED:credit_card] please"
}

test_luhn_invalid_number_is_not_a_card if {
	fs := pii.findings with input as user_message("order 4111 1111 1111 1112 shipped")
	count(fs) == 0
}

test_iban_phone_ssn_and_api_key_are_detected if {
	every text in ["IBAN DE89 3704 0044 0532 0130 00", "call +44 20 7946 0958", "ssn 123-45-6789", "nino AB 12 34 56 C", "key AKIAIOSFODNN7EXAMPLE"] {
		fs := pii.findings with input as user_message(text)
		count(fs) == 1
	}
}

test_private_key_is_denied if {
	fs := pii.findings with input as user_message("-----BEGIN RSA PRIVATE KEY-----\nMIIE...")
	some f in fs
	f.disposition == "deny"
	f.policy_data.categories == ["private_key"]
}

test_tool_arguments_are_redacted_by_pointer if {
	fs := pii.findings with input as testlib.tool_call("http.post", {"body": testlib.arg("token sk-abcdefghijklmnopqrstuvwxyz123456", "u1", "user_input")})
	some f in fs
	f.modifications.redactions == [{"path": "/arguments/body/value", "replacement": "token [REDACTED:api_key]"}]
}

test_clean_text_passes if {
	fs := pii.findings with input as user_message("refactor the parser please")
	count(fs) == 0
}

test_other_methods_are_not_scanned if {
	inp := testlib.step("steps/turnStart", {"turn_id": "alice@example.com"}, testlib.empty_session, testlib.client_full)
	fs := pii.findings with input as inp
	count(fs) == 0
}

test_wrapped_mcp_results_are_scanned if {
	inp := testlib.step("protocols/MCP/tools/call", {"jsonrpc": "2.0", "id": 3, "result": {"content": [{"type": "text", "text": "owner: bob@example.com"}]}}, testlib.empty_session, testlib.client_full)
	fs := pii.findings with input as inp
	some f in fs
	f.modifications.redactions == [{"path": "/result/content/0/text", "replacement": "owner: [REDACTED:email]"}]
}

test_prefilter_skips_categories_whose_literals_are_absent if {
	inp := user_message("lorem ipsum dolor sit amet")
	count(pii.present_literals["/content/0/value"]) == 0 with input as inp
	not pii.may_match("email", "/content/0/value") with input as inp
	not pii.may_match("credit_card", "/content/0/value") with input as inp
}

test_prefilter_admits_every_positive_sample if {
	samples := ["alice@example.com", "+44 20 7946 0958", "4111 1111 1111 1111", "DE89 3704 0044 0532 0130 00", "123-45-6789", "AB 12 34 56 C", "12345678Z", "2345 6789 0124", "AKIAIOSFODNN7EXAMPLE", "ghp_abcdefghijklmnopqrstuvwxyz0123456789", "xoxb-1234567890-abc", "eyJhbGciOiJI.eyJzdWIiOiIx.c2lnbmF0dXJl", "-----BEGIN PRIVATE KEY-----"]
	every text in samples {
		count([c | some c, p in pii.cfg.patterns; regex.match(p, text)]) > 0
		every category, pattern in pii.cfg.patterns {
			admitted_if_matching(category, pattern, text)
		}
	}
}

admitted_if_matching(_, pattern, text) if not regex.match(pattern, text)

admitted_if_matching(category, _, text) if pii.may_match(category, "/content/0/value") with input as user_message(text)

# Every category's regex, run over texts its shape pre-filters must admit: each grouping a pattern allows
# (spaces, hyphens, none, one per digit), capitals and digits next to letters, unicode around. A category
# (or the national phone alternation) that matches a text is admitted for it.
prefilter_soundness_samples := [
	"4111111111111111", "4111 1111 1111 1111", "4111-1111-1111-1111", "4 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1",
	"4-1-1-1-1-1-1-1-1-1-1-1-1", "3782 822463 10005", "5500-0000-0000-0004", "carte n°4111 1111 1111 1111 é",
	"DE89370400440532013000", "DE89 3704 0044 0532 0130 00", "GB82 WEST 1234 5698 7654 32", "FR1420041010050500013M02606",
	"iban:ES9121000418450200051332.", "AB123456C", "AB 12 34 56 C", "QQ 12 34 56 A", "AB12 34 56C",
	"12345678Z", "12345678-Z", "dni 00000000T", "2345 6789 0124", "2345-6789-0124", "234567890124", "2345 67890124",
	"123-45-6789", "ssn:123-45-6789;", "+44 20 7946 0958", "+1 (415) 555-0132", "+33 1 23 45 67 89", "+91-98765-43210",
	"(415)555-0132", "(415) 555-0132", "415-555-0132", "415.555.0132", "020 7946 0958", "07700 900123", "0161 496 0000",
	"01632 960000", "01 23 45 67 89", "06.12.34.56.78", "030 12345678", "0171 1234567", "030/12345678", "030-12345678",
	"612 345 678", "912 34 56 78", "098765 43210", "98765 43210", "tél. 06 12 34 56 78 ☎", "Ruf 089/1234567 an",
	"2026-11-29T12:00:01.234Z INFO status=200 amount=129.99 EUR order=18234", "epoch 1764410400123 id 000123456789",
]

test_shape_prefilters_admit_every_match if {
	every text in prefilter_soundness_samples {
		every category, pattern in pii.cfg.patterns {
			admitted_if_matching(category, pattern, text)
		}
		admitted_if_matching("national_phone", pii.national_phone_pattern, text)
	}
}

test_shape_writes_digits_as_0_and_capitals_as_A if {
	pii.shapes["/content/0/value"] == "Ab0 é-A_00:A" with input as user_message("Ab9 é-Z_12:A")
	pii.shapes["/content/0/value"] == "plain text" with input as user_message("plain text")
		with data.acs_config.pii.shape_prefilters as {"x": ["AA"]}
}

# With only digit-bearing shape literals (the default), a text without a digit gets no shape at all.
test_text_without_digits_gets_no_shape if {
	not pii.shapes["/content/0/value"] with input as user_message("Plain Text, NO DIGITS")
	not pii.may_match("iban", "/content/0/value") with input as user_message("Plain Text, NO DIGITS")
	pii.shapes["/content/0/value"] == "Ab0" with input as user_message("Ab7")
}

# A digitless literal in either list gives a digitless text its shape; digit-bearing literals do not.
test_digitless_literal_in_either_list_keeps_the_shape_of_digitless_text if {
	pii.shapes["/content/0/value"] == "plain text" with input as user_message("plain text")
		with data.acs_config.pii.compact_shape_prefilters as {"x": ["AAAA"]}
	not pii.shapes["/content/0/value"] with input as user_message("plain text")
		with data.acs_config.pii.compact_shape_prefilters as {"x": ["0000"]}
		with data.acs_config.pii.shape_prefilters as {"y": ["00"]}
}

# Digits are told from the shape's `0`s, and a `0` is its own shape: a text whose only digits are zeros
# keeps its shape and runs the categories whose shape it has.
test_text_with_only_zero_digits_keeps_its_shape if {
	pii.shapes["/content/0/value"] == "ssn 000-00-0000" with input as user_message("ssn 000-00-0000")
	pii.may_match("us_ssn", "/content/0/value") with input as user_message("ssn 000-00-0000")
	not pii.may_match("iban", "/content/0/value") with input as user_message("ssn 000-00-0000")
}

digit_categories := {"phone", "national_phone", "credit_card", "iban", "us_ssn", "uk_nino", "es_dni", "in_aadhaar"}

# Log lines have digits (dates, times, amounts, ids, addresses, versions) but none of the shapes above.
test_log_lines_with_digits_run_no_digit_category if {
	every text in [
		"2026-11-29T12:00:01.234Z INFO  GET /api/v1/orders/18234 status=200 duration_ms=12.4 request_id=req_7f3a9c21b4",
		"2026-11-29 12:00:01,251 WARN payment captured order=18234 amount=129.99 EUR attempt=1 host=10.0.12.34:8443",
		"GET /static/app.3f9a.js HTTP/1.1 304 0 v2.14.3 pid=4123 mem=512MB",
	] {
		every category in digit_categories {
			not pii.may_match(category, "/content/0/value") with input as user_message(text)
		}
	}
}

# Known limit: a shape cannot tell `+0` from `+1`, so a log's `+0000` time zone runs the phone regex (only it).
test_a_plus_zero_time_zone_runs_only_the_phone_regex if {
	inp := user_message("[29/Nov/2026:12:00:02 +0000] \"GET / HTTP/1.1\" 200 512")
	pii.may_match("phone", "/content/0/value") with input as inp
	every category in digit_categories - {"phone"} {
		not pii.may_match(category, "/content/0/value") with input as inp
	}
	count(pii.findings) == 0 with input as inp
}

# A shape literal without a digit is still looked for in a shape without one; those with one are not.
test_shape_literals_without_digits_are_checked_on_digitless_text if {
	pii.shape_literals_in("AA a") == {"AA"} with data.acs_config.pii.shape_prefilters as {"x": ["AA", "A0"]}
	pii.shape_literals_in("AA A0") == {"AA", "A0"} with data.acs_config.pii.shape_prefilters as {"x": ["AA", "A0"]}
}

# A compact-shape literal without a digit is still looked for in a shape without one.
test_compact_shape_literals_without_digits_are_checked_on_digitless_text if {
	pii.compact_shape_literals_in("AA AA-a") == {"AAAA"} with data.acs_config.pii.compact_shape_prefilters as {"x": ["AAAA", "0000"]}
	pii.compact_shape_literals_in("AA 00-00") == {"0000"} with data.acs_config.pii.compact_shape_prefilters as {"x": ["AAAA", "0000"]}
}

# Cards and Aadhaar numbers are checked over their digits, read natively (split), whatever the separators.
test_digits_are_read_in_order_without_separators if {
	pii.digits("4111 1111-1111 1111") == [4, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1]
	pii.digits("a1é2٣3") == [1, 2, 3]
	pii.digits("") == []
}

test_category_without_prefilter_always_runs if {
	pii.may_match("custom", "/content/0/value") with input as user_message("anything")
}

test_iban_check_digits_are_verified if {
	pii.iban_valid("DE89 3704 0044 0532 0130 00")
	pii.iban_valid("GB82 WEST 1234 5698 7654 32")
	pii.iban_valid("FR1420041010050500013M02606")
	not pii.iban_valid("DE88 3704 0044 0532 0130 00")
	not pii.iban_valid("GB82 WEST 1234 5698 7654 33")
	not pii.iban_valid("DE89 3704 0044 0532 0130 0") # length for DE is 22
	not pii.iban_valid("ZZ89 3704 0044 0532 0130 00") # no such country
}

test_iban_shape_with_wrong_check_digits_is_not_redacted if {
	fs := pii.findings with input as user_message("pay to DE88 3704 0044 0532 0130 00 today")
	count(fs) == 0
	fs2 := pii.findings with input as user_message("pay to GB82 WEST 1234 5698 7654 32 today")
	some f in fs2
	f.modifications.redactions == [{"path": "/content/0/value", "replacement": "pay to [REDACTED:iban] today"}]
}

test_spanish_dni_control_letter_is_verified if {
	pii.dni_valid("12345678Z")
	pii.dni_valid("00000000-T")
	not pii.dni_valid("12345678A")
	fs := pii.findings with input as user_message("DNI 12345678Z")
	some f in fs
	f.policy_data.categories == ["es_dni"]
	count(pii.findings) == 0 with input as user_message("DNI 12345678A")
}

test_aadhaar_verhoeff_checksum_is_verified if {
	pii.aadhaar_valid("2345 6789 0124")
	pii.aadhaar_valid("234567890124")
	not pii.aadhaar_valid("2345 6789 0125")
	fs := pii.findings with input as user_message("aadhaar 2345-6789-0124")
	some f in fs
	f.policy_data.categories == ["in_aadhaar"]
	count(pii.findings) == 0 with input as user_message("order 2345 6789 0125")
}

test_match_inside_a_longer_match_is_redacted_with_it if {
	# 4111 1111 1007 is a Verhoeff-valid Aadhaar shape; the whole 16 digits are a Luhn-valid card.
	pii.aadhaar_valid("4111 1111 1007")
	fs := pii.findings with input as user_message("card 4111 1111 1007 1118 ok")
	some f in fs
	f.policy_data.categories == ["credit_card"]
	f.modifications.redactions == [{"path": "/content/0/value", "replacement": "card [REDACTED:credit_card] ok"}]
}

test_two_categories_matching_the_same_text_redact_it_once if {
	# A custom category whose pattern also matches an email: the text is replaced once, named by the first category.
	patterns := object.union(data.acs_config.pii.patterns, {"contact": `[a-z]+@example\.com`})
	fs := pii.findings with input as user_message("write to alice@example.com today")
		with data.acs_config.pii.patterns as patterns
	some f in fs
	f.policy_data.categories == ["contact", "email"]
	f.modifications.redactions == [{"path": "/content/0/value", "replacement": "write to [REDACTED:contact] today"}]
}

# National-format phone numbers (data: pii.national_phones), one sample per configured country.
national_phone_samples := [
	"(415) 555-0132", "415-555-0132", "415.555.0132", # US/CA (NANP)
	"020 7946 0958", "07700 900123", "0161 496 0000", "01632 960000", # GB
	"01 23 45 67 89", "06.12.34.56.78", # FR
	"030 12345678", "0171 1234567", "030/12345678", # DE
	"612 345 678", "912 34 56 78", # ES
	"098765 43210", "98765 43210", # IN
]

test_national_phone_numbers_are_redacted_as_phone if {
	every number in national_phone_samples {
		fs := pii.findings with input as user_message(sprintf("call %s today", [number]))
		some f in fs
		f.policy_data.categories == ["phone"]
		f.modifications.redactions == [{"path": "/content/0/value", "replacement": "call [REDACTED:phone] today"}]
	}
}

test_digit_shapes_that_are_not_phone_numbers_are_left_alone if {
	every text in [
		"due 2026-11-29", "at 2026-11-29T10:00:00Z", "at 2026-11-29 10:00:00", "on 29/11/2026", "on 29.11.2026",
		"on 01.12.2026 10:00", "on 11/29/2026 09:30", "version 1.2.3", "build 10.0.19045.3693", "host 192.168.100.200",
		"paid $1,234,567.89", "paid 1 234 567,89 €", "paid € 12.500,00", "paid USD 415.55", "epoch 1764410400",
		"total 1234567890", "ISBN 978-3-16-148410-0", "ssn-like 123-45-6789 pattern aside",
		"order 4000 0566 5566 5557", "ref FR14 2004 1010 0505 0001 3M02 607", "ref DE88 3704 0044 0532 0130 00",
	] {
		not phone_in(text)
	}
}

phone_in(text) if {
	some c in pii.matches with input as user_message(text)
	c.category == "phone"
}

test_card_and_iban_digits_are_not_read_as_phone_numbers if {
	every text in ["4111 1111 1111 1111", "5500-0000-0000-0004", "3782 822463 10005", "6011 0009 9013 9424", "4000 0566 5566 5556"] {
		fs := pii.findings with input as user_message(sprintf("card %s ok", [text]))
		some f in fs
		f.policy_data.categories == ["credit_card"]
	}
	every text in ["DE89 3704 0044 0532 0130 00", "FR14 2004 1010 0505 0001 3M02 606", "ES91 2100 0418 4502 0005 1332"] {
		fs := pii.findings with input as user_message(sprintf("pay %s ok", [text]))
		some f in fs
		f.policy_data.categories == ["iban"]
	}
}

test_national_number_inside_an_international_one_is_redacted_once if {
	fs := pii.findings with input as user_message("call +1 (415) 555-0132 or 020 7946 0958, mail bob@example.com")
	some f in fs
	f.policy_data.categories == ["email", "phone"]
	f.modifications.redactions == [{"path": "/content/0/value", "replacement": "call [REDACTED:phone] or [REDACTED:phone], mail [REDACTED:email]"}]
}

test_national_phones_run_only_on_text_with_digits if {
	not pii.may_match("national_phone", "/content/0/value") with input as user_message("call me at home, extension unknown")
	every number in national_phone_samples {
		regex.match(pii.national_phone_pattern, number)
		pii.may_match("national_phone", "/content/0/value") with input as user_message(number)
	}
}

test_national_phones_can_be_switched_off if {
	count(pii.findings) == 0 with input as user_message("call 020 7946 0958") with data.acs_config.pii.national_phones as {}
}

# The Luhn sum by position rows equals the formula over every digit count 1..25 (rows up to 19, the formula
# beyond) and digit sequences that put each digit at both parities.
test_luhn_total_by_rows_equals_the_formula if {
	every n in numbers.range(1, 25) {
		every k in numbers.range(0, 9) {
			ds := [((((i * 7) + (k * 3)) + n) % 10) | some i in numbers.range(1, n)]
			pii.luhn_total(ds, n) == sum([pii.luhn_terms[((n - 1) - i) % 2][d] | some i, d in ds])
		}
	}
}

test_luhn_valid_on_long_and_short_digit_runs if {
	pii.luhn_valid("4111111111111111")
	pii.luhn_valid("4111 1111 1111 1111")
	not pii.luhn_valid("4111111111111112")
	pii.luhn_valid("6011000990139424") # 16 digits
	pii.luhn_valid("4222222222222") # 13 digits
	pii.luhn_valid("0000000000000000000000") # 22 digits: the formula
	not pii.luhn_valid("0000000000000000000001")
	not pii.luhn_valid("000000000000") # 12 digits: too short
}

# The bundle builder's precomputed alternation is used only while it was derived from the national_phones in
# force; otherwise (edited or replaced data) the module builds it.
test_national_phone_pattern_uses_the_precomputed_alternation_only_when_current if {
	phones := {"AA": "a+", "BB": "b+"}
	pii.national_phone_pattern == "PRECOMPUTED" with data.acs_config.pii.national_phones as phones
		with data.acs_config.pii.national_phone_alternation as {"of": phones, "pattern": "PRECOMPUTED"}
	pii.national_phone_pattern == "(?:a+)|(?:b+)" with data.acs_config.pii.national_phones as phones
		with data.acs_config.pii.national_phone_alternation as {"of": {"AA": "a+"}, "pattern": "STALE"}
	pii.national_phone_pattern == "(?:a+)|(?:b+)" with data.acs_config.pii.national_phones as phones
}
