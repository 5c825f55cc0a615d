# PII and secrets: redact matches in data-bearing strings (RFC 6901 redactions), or deny for deny categories.
package acs.pii

import data.acs.lib

cfg := lib.config.pii

applies if input.method in cfg.methods

applies if lib.is_mcp

# Pre-filters: per category, literals its pattern cannot match without. A category runs its regex on a field
# only when each pre-filter list it has admits the field; `contains` runs inside the Wasm module, while each
# regex call marshals the whole text out to the host, so text that cannot match costs no host call.
# Categories without a pre-filter always run. Editing a pattern means keeping its literals necessary.
#   pii.prefilters: literals of the text itself (`@`, `AKIA`, `-----BEGIN `).
#   pii.shape_prefilters: literals of the field's shape, the text with every ASCII digit written `0` and
#     every ASCII capital written `A` (`000-00-0000` for a US SSN, `AA00` heads an IBAN). Dates, amounts
#     and ids have digits but rarely these shapes, so logs do not run every digit-bearing category.
#   pii.compact_shape_prefilters: literals of the shape without spaces and hyphens (13 `0`s for a card
#     number, whatever its grouping).
prefilter_lists := object.get(cfg, "prefilters", {})

shape_prefilter_lists := object.get(cfg, "shape_prefilters", {})

compact_shape_prefilter_lists := object.get(cfg, "compact_shape_prefilters", {})

literals_of(lists) := {lit | some lits in lists; some lit in lits}

prefilter_literals := literals_of(prefilter_lists)

shape_literals := literals_of(shape_prefilter_lists)

compact_shape_literals := literals_of(compact_shape_prefilter_lists)

# Written out, so it is a constant of the compiled policy rather than built on every evaluation.
# strings.replace_n runs natively: one pass over the text, no copy when it has no digit or capital.
shape_replacements := {
	"1": "0", "2": "0", "3": "0", "4": "0", "5": "0", "6": "0", "7": "0", "8": "0", "9": "0",
	"B": "A", "C": "A", "D": "A", "E": "A", "F": "A", "G": "A", "H": "A", "I": "A", "J": "A", "K": "A", "L": "A", "M": "A", "N": "A",
	"O": "A", "P": "A", "Q": "A", "R": "A", "S": "A", "T": "A", "U": "A", "V": "A", "W": "A", "X": "A", "Y": "A", "Z": "A",
}

present_literals[f.path] := {lit | some lit in prefilter_literals; contains(f.value, lit)} if {
	applies
	some f in lib.text_fields
}

shapes[f.path] := shape if {
	applies
	some f in lib.text_fields
	shape := strings.replace_n(shape_replacements, f.value)
	shape_kept(shape)
}

# A shape holds a literal with a `0` only where the text has an ASCII digit, i.e. where the shape has a
# `0`. When every shape literal has one (the default), a text without a digit keeps no shape (and admits
# no shape pre-filter). The shape pass and one scan for `0` (native, 16 bytes at a time) cost less than
# scanning the text for each of the ten digits.
# (Existence checks over the configured lists: no set is built for them on each evaluation.)
shape_kept(shape) := shape_literal_configured if contains(shape, "0")

else := digitless_shape_literal_configured

default shape_literal_configured := false

shape_literal_configured if {
	some lits in shape_prefilter_lists
	lits[_]
}

shape_literal_configured if {
	some lits in compact_shape_prefilter_lists
	lits[_]
}

default digitless_shape_literal_configured := false

digitless_shape_literal_configured if {
	some lits in shape_prefilter_lists
	some lit in lits
	not contains(lit, "0")
}

digitless_shape_literal_configured if {
	some lits in compact_shape_prefilter_lists
	some lit in lits
	not contains(lit, "0")
}

present_shape_literals[path] := shape_literals_in(shape) if some path, shape in shapes

# A shape without a digit holds no literal with a `0`: a digit-free text (most prose) scans none of them.
shape_literals_in(shape) := {lit | some lit in shape_literals; contains(shape, lit)} if contains(shape, "0")

else := {lit |
	some lit in shape_literals
	not contains(lit, "0")
	contains(shape, lit)
}

present_compact_shape_literals[path] := compact_shape_literals_in(shape) if some path, shape in shapes

# Removing spaces and hyphens keeps the digits, so a shape without one holds no literal with a `0` and
# the compact copy is made only when some other literal is configured.
compact_shape_literals_in(shape) := {lit |
	compact := strings.replace_n({" ": "", "-": ""}, shape)
	some lit in compact_shape_literals
	contains(compact, lit)
} if contains(shape, "0")

else := {lit |
	some lit in compact_shape_literals
	not contains(lit, "0")
	contains(strings.replace_n({" ": "", "-": ""}, shape), lit)
}

# Categories whose regex cannot run on a field: a kind of pre-filter list they have (a value other than
# false, as `not lists[category]` reads it) holds no literal present in the field's text, shape or compact
# shape; a field without a shape has none of the shape literals. One set per field, so each category costs
# one membership test: no literal sets are built, and each literal is looked for once per list it is in.
# (present_literals and the *_literals_in functions give the literals themselves, for the tests.)
blocked_categories[f.path] := (listed(prefilter_lists) - with_literal(prefilter_lists, f.value)) | shape_blocked(f.path) if {
	applies
	some f in lib.text_fields
}

listed(lists) := {c | some c, lits in lists; lits != false}

with_literal(lists, text) := {c |
	some c, lits in lists
	some lit in lits
	contains(text, lit)
}

shape_blocked(path) := (listed(shape_prefilter_lists) - with_literal(shape_prefilter_lists, shape)) | (listed(compact_shape_prefilter_lists) - with_literal(compact_shape_prefilter_lists, strings.replace_n({" ": "", "-": ""}, shape))) if {
	shape := shapes[path]
} else := listed(shape_prefilter_lists) | listed(compact_shape_prefilter_lists)

# Also for a path that is no text field (or a method the module does not scan): only unlisted categories.
may_match(category, path) if not category in object.get(blocked_categories, path, listed(prefilter_lists) | listed(shape_prefilter_lists) | listed(compact_shape_prefilter_lists))

# Every candidate match: {path, category, text}.
candidates contains {"path": f.path, "category": category, "text": m} if {
	applies
	some f in lib.text_fields
	blocked := blocked_categories[f.path]
	some category, pattern in cfg.patterns
	not category in blocked
	some m in regex.find_n(pattern, f.value, -1)
}

# National-format phone numbers (data: pii.national_phones, one pattern per country or numbering plan). They
# are matched as category `phone`, like international `+CC …` numbers, by one alternation of every country's
# pattern (each in its own group, so inline flags stay scoped): a text costs one regex host call whatever
# the number of countries, and only when its shape has a national grouping (shape pre-filter
# `national_phone`). A national number inside a longer match (a card, an IBAN, an international number) is
# dropped by inside_longer_match.
national_phone_pattern := cfg.national_phone_alternation.pattern if {
	# Precomputed by the bundle builder (withDerivedData in src/policy/library.ts), used only while it was
	# derived from the national_phones in force: a string in data costs the regex host call no dump.
	cfg.national_phone_alternation.of == object.get(cfg, "national_phones", {})
} else := national_phone_alternation

national_phone_alternation := concat("|", [sprintf("(?:%s)", [p]) | some p in object.get(cfg, "national_phones", {})])

candidates contains {"path": f.path, "category": "phone", "text": m} if {
	applies
	some f in lib.text_fields
	not "national_phone" in blocked_categories[f.path]
	national_phone_pattern != ""
	some m in regex.find_n(national_phone_pattern, f.value, -1)
}

digit_value := {"0": 0, "1": 1, "2": 2, "3": 3, "4": 4, "5": 5, "6": 6, "7": 7, "8": 8, "9": 9}

# The ASCII digits of s, in order: a lookup (no to_number host call) over its characters (native split).
digits(s) := [digit_value[c] | some c in split(s, "")]

# A digit's Luhn term by its position from the right: as it is in even positions, doubled (less 9 when over
# 9) in odd ones. Two lookups per digit, no rule call.
luhn_terms := [[0, 1, 2, 3, 4, 5, 6, 7, 8, 9], [0, 2, 4, 6, 8, 1, 3, 5, 7, 9]]

# Luhn checksum over the digits, counted from the right.
luhn_valid(s) if {
	ds := digits(s)
	n := count(ds)
	n >= 13
	luhn_total(ds, n) % 10 == 0
}

# The sum of the digits' Luhn terms. Up to 19 digits (every card number) each digit's term is two lookups in
# the row of its position from the left, read from the table for the count's parity: no arithmetic per digit
# (three number operations each cost more than the checks they feed). Longer runs take the formula.
luhn_total(ds, n) := sum([rows[i][d] | some i, d in ds]) if {
	n <= 19
	rows := luhn_rows[n % 2]
} else := sum([luhn_terms[((n - 1) - i) % 2][d] | some i, d in ds])

# luhn_rows[n % 2][i]: luhn_terms[((n - 1) - i) % 2] for i = 0..18, written out as a constant (static data).
luhn_rows := [
	[ # n even: the first digit is doubled
		[0, 2, 4, 6, 8, 1, 3, 5, 7, 9],
		[0, 1, 2, 3, 4, 5, 6, 7, 8, 9],
		[0, 2, 4, 6, 8, 1, 3, 5, 7, 9],
		[0, 1, 2, 3, 4, 5, 6, 7, 8, 9],
		[0, 2, 4, 6, 8, 1, 3, 5, 7, 9],
		[0, 1, 2, 3, 4, 5, 6, 7, 8, 9],
		[0, 2, 4, 6, 8, 1, 3, 5, 7, 9],
		[0, 1, 2, 3, 4, 5, 6, 7, 8, 9],
		[0, 2, 4, 6, 8, 1, 3, 5, 7, 9],
		[0, 1, 2, 3, 4, 5, 6, 7, 8, 9],
		[0, 2, 4, 6, 8, 1, 3, 5, 7, 9],
		[0, 1, 2, 3, 4, 5, 6, 7, 8, 9],
		[0, 2, 4, 6, 8, 1, 3, 5, 7, 9],
		[0, 1, 2, 3, 4, 5, 6, 7, 8, 9],
		[0, 2, 4, 6, 8, 1, 3, 5, 7, 9],
		[0, 1, 2, 3, 4, 5, 6, 7, 8, 9],
		[0, 2, 4, 6, 8, 1, 3, 5, 7, 9],
		[0, 1, 2, 3, 4, 5, 6, 7, 8, 9],
		[0, 2, 4, 6, 8, 1, 3, 5, 7, 9],
	],
	[ # n odd: the first digit is as it is
		[0, 1, 2, 3, 4, 5, 6, 7, 8, 9],
		[0, 2, 4, 6, 8, 1, 3, 5, 7, 9],
		[0, 1, 2, 3, 4, 5, 6, 7, 8, 9],
		[0, 2, 4, 6, 8, 1, 3, 5, 7, 9],
		[0, 1, 2, 3, 4, 5, 6, 7, 8, 9],
		[0, 2, 4, 6, 8, 1, 3, 5, 7, 9],
		[0, 1, 2, 3, 4, 5, 6, 7, 8, 9],
		[0, 2, 4, 6, 8, 1, 3, 5, 7, 9],
		[0, 1, 2, 3, 4, 5, 6, 7, 8, 9],
		[0, 2, 4, 6, 8, 1, 3, 5, 7, 9],
		[0, 1, 2, 3, 4, 5, 6, 7, 8, 9],
		[0, 2, 4, 6, 8, 1, 3, 5, 7, 9],
		[0, 1, 2, 3, 4, 5, 6, 7, 8, 9],
		[0, 2, 4, 6, 8, 1, 3, 5, 7, 9],
		[0, 1, 2, 3, 4, 5, 6, 7, 8, 9],
		[0, 2, 4, 6, 8, 1, 3, 5, 7, 9],
		[0, 1, 2, 3, 4, 5, 6, 7, 8, 9],
		[0, 2, 4, 6, 8, 1, 3, 5, 7, 9],
		[0, 1, 2, 3, 4, 5, 6, 7, 8, 9],
	],
]

# IBAN check digits (ISO 13616 / ISO 7064 MOD 97-10): the country's length from data (pii.iban_lengths),
# then the first four characters moved to the end, letters as 10..35, and the number mod 97 must be 1.
iban_char_value := {c: i | some i, c in split("0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ", "")}

iban_value_digits(v) := [v] if v < 10

iban_value_digits(v) := [floor(v / 10), v % 10] if v >= 10

# 10^e mod 97 for e = 0..71 (an IBAN has at most 34 characters, so at most 68 digits): the number mod 97 is
# the sum of digit × 10^position mod 97, with no big-number arithmetic.
pow10_mod97 := [1, 10, 3, 30, 9, 90, 27, 76, 81, 34, 49, 5, 50, 15, 53, 45, 62, 38, 89, 17, 73, 51, 25, 56, 75, 71, 31, 19, 93, 57, 85, 74, 61, 28, 86, 84, 64, 58, 95, 77, 91, 37, 79, 14, 43, 42, 32, 29, 96, 87, 94, 67, 88, 7, 70, 21, 16, 63, 48, 92, 47, 82, 44, 52, 35, 59, 8, 80, 24, 46, 72, 41]

iban_valid(s) if {
	compact := replace(s, " ", "")
	count(compact) == cfg.iban_lengths[substring(compact, 0, 2)]
	rearranged := concat("", [substring(compact, 4, -1), substring(compact, 0, 4)])
	ds := [d | some ch in split(rearranged, ""); some d in iban_value_digits(iban_char_value[ch])]
	n := count(ds)

	# The head in parentheses is one term, so OPA reads a comprehension too (OPA issue #4215).
	sum([((d * pow10_mod97[(n - 1) - i]) % 97) | some i, d in ds]) % 97 == 1
}

# Spanish DNI: eight digits and the control letter TRWAGMYFPDXBNJZSQVHLCKE[number mod 23].
dni_valid(s) if {
	n := to_number(substring(s, 0, 8))
	substring("TRWAGMYFPDXBNJZSQVHLCKE", n % 23, 1) == substring(s, count(s) - 1, 1)
}

# Indian Aadhaar: twelve digits whose Verhoeff checksum (dihedral group D5) is 0. Verhoeff is a fold over the
# digits from the right; Rego has no fold, so the twelve steps are written out.
verhoeff_d := [
	[0, 1, 2, 3, 4, 5, 6, 7, 8, 9],
	[1, 2, 3, 4, 0, 6, 7, 8, 9, 5],
	[2, 3, 4, 0, 1, 7, 8, 9, 5, 6],
	[3, 4, 0, 1, 2, 8, 9, 5, 6, 7],
	[4, 0, 1, 2, 3, 9, 5, 6, 7, 8],
	[5, 9, 8, 7, 6, 0, 4, 3, 2, 1],
	[6, 5, 9, 8, 7, 1, 0, 4, 3, 2],
	[7, 6, 5, 9, 8, 2, 1, 0, 4, 3],
	[8, 7, 6, 5, 9, 3, 2, 1, 0, 4],
	[9, 8, 7, 6, 5, 4, 3, 2, 1, 0],
]

verhoeff_p := [
	[0, 1, 2, 3, 4, 5, 6, 7, 8, 9],
	[1, 5, 7, 6, 2, 8, 3, 0, 9, 4],
	[5, 8, 0, 3, 7, 9, 6, 1, 4, 2],
	[8, 9, 1, 6, 0, 4, 3, 5, 2, 7],
	[9, 4, 5, 3, 1, 2, 6, 8, 7, 0],
	[4, 2, 8, 6, 5, 7, 3, 9, 0, 1],
	[2, 7, 9, 3, 8, 0, 6, 4, 1, 5],
	[7, 0, 4, 6, 9, 1, 3, 2, 5, 8],
]

aadhaar_valid(s) if {
	ds := array.reverse(digits(s))
	count(ds) == 12
	c1 := verhoeff_d[0][verhoeff_p[0][ds[0]]]
	c2 := verhoeff_d[c1][verhoeff_p[1][ds[1]]]
	c3 := verhoeff_d[c2][verhoeff_p[2][ds[2]]]
	c4 := verhoeff_d[c3][verhoeff_p[3][ds[3]]]
	c5 := verhoeff_d[c4][verhoeff_p[4][ds[4]]]
	c6 := verhoeff_d[c5][verhoeff_p[5][ds[5]]]
	c7 := verhoeff_d[c6][verhoeff_p[6][ds[6]]]
	c8 := verhoeff_d[c7][verhoeff_p[7][ds[7]]]
	c9 := verhoeff_d[c8][verhoeff_p[0][ds[8]]]
	c10 := verhoeff_d[c9][verhoeff_p[1][ds[9]]]
	c11 := verhoeff_d[c10][verhoeff_p[2][ds[10]]]
	c12 := verhoeff_d[c11][verhoeff_p[3][ds[11]]]
	c12 == 0
}

# Categories with a check beyond the pattern.
checked_categories := {"credit_card", "iban", "es_dni", "in_aadhaar"}

valid(c) if not c.category in checked_categories

valid(c) if {
	c.category == "credit_card"
	luhn_valid(c.text)
}

valid(c) if {
	c.category == "iban"
	iban_valid(c.text)
}

valid(c) if {
	c.category == "es_dni"
	dni_valid(c.text)
}

# Valid candidates. Those of category in_aadhaar are checked last, and only when no other valid candidate of
# the same text is longer and holds them (the first 12 digits of a card number): such a one could not be a
# match either way (inside_longer_match), and whatever lies inside it lies inside the longer one too, so
# leaving it out changes no match and saves its Verhoeff check.
checked contains c if some c in checked_outer

checked contains c if {
	some c in candidates
	c.category == "in_aadhaar"
	not inside_longer_outer(c)
	valid(c)
}

checked_outer contains c if {
	some c in candidates
	c.category != "in_aadhaar"
	valid(c)
}

inside_longer_outer(c) if {
	some o in checked_outer
	o.text != c.text
	contains(o.text, c.text)
	o.path == c.path
}

# A valid match inside a longer valid match of the same text (an Aadhaar-shaped run at the start of a card
# number) is dropped, so the longer one is redacted whole instead of leaving its tail in clear. (Checking
# containment before every check made the card's Luhn check run twice, 1 µs slower; `checked` holds the other
# categories' checks first and skips only an inner Aadhaar candidate's.)
# (Texts first: most pairs differ in them, and the path of one field's candidates is always the same.)
inside_longer_match(c) if {
	some o in checked
	o.text != c.text # a different text that contains c's is longer
	contains(o.text, c.text)
	o.path == c.path
}

matches contains c if {
	some c in checked
	not inside_longer_match(c)
}

categories := {c.category | some c in matches}

deny_categories := {c | some c in categories; c in cfg.deny_categories}

# deny_findings, without the full pipeline when it is empty for want of a candidate: a field has a deny
# category only if a deny category's regex matches it (a regex call per deny category that the field's
# pre-filters admit; no other category's pre-filter or regex). acs.decision uses it when another module denies.
deny_findings_if_candidate := deny_findings if deny_candidate

else := set()

deny_candidate if {
	applies
	some f in lib.text_fields
	some category in cfg.deny_categories
	pattern := cfg.patterns[category]
	not category_blocked(category, f)
	some _ in regex.find_n(pattern, f.value, -1)
}

deny_candidate if {
	applies
	"phone" in cfg.deny_categories
	some f in lib.text_fields
	not category_blocked("national_phone", f)
	national_phone_pattern != ""
	some _ in regex.find_n(national_phone_pattern, f.value, -1)
}

# `category in blocked_categories[f.path]` for one category, without scanning for the other categories' literals.
category_blocked(category, f) if prefilter_blocks(prefilter_lists, category, f.value)

else if shape_blocks(category, f.path)

shape_blocks(category, path) if prefilter_blocks(shape_prefilter_lists, category, shapes[path])

shape_blocks(category, path) if prefilter_blocks(compact_shape_prefilter_lists, category, strings.replace_n({" ": "", "-": ""}, shapes[path]))

shape_blocks(category, path) if {
	not shapes[path]
	shape_prefilter_lists[category] != false
}

shape_blocks(category, path) if {
	not shapes[path]
	compact_shape_prefilter_lists[category] != false
}

# The category is listed (as `listed` reads it) and none of its literals is in the text (`with_literal`).
prefilter_blocks(lists, category, text) if {
	lits := lists[category]
	lits != false
	not has_literal(lits, text)
}

has_literal(lits, text) if {
	some lit in lits
	contains(text, lit)
}

paths := {c.path | some c in matches}

# One replacement per matched text: when two categories match the very same text, the first in sorted order
# names it (an object keyed by text with two values would be a conflict, and the step would fail closed).
redacted_value(path) := strings.replace_n(
	{text: sprintf(cfg.replacement_format, [sort(cats)[0]]) |
		some text in {c.text | some c in matches; c.path == path}
		cats := {c.category | some c in matches; c.path == path; c.text == text}
	},
	[f.value | some f in lib.text_fields; f.path == path][0],
)

# METADATA
# title: Secrets that must not pass
# description: Deny a step carrying a deny-category secret (private keys by default); the value is never echoed.
# custom:
#   policy_id: acs.pii
#   policy_name: PII and secrets
#   rule_id: pii.deny
#   reason_code: pii_detected
deny_findings contains {
	"disposition": "deny",
	"reason_code": "pii_detected",
	"reasoning": sprintf("step carries %s", [concat(", ", sort(deny_categories))]),
	"policy_id": "acs.pii",
	"policy_name": "PII and secrets",
	"rule_id": "pii.deny",
	"paradigm": "pii",
	"policy_data": {"categories": sort(categories), "paths": sort(paths)},
} if count(deny_categories) > 0

# METADATA
# title: PII redaction
# description: Modify the step, replacing each PII match in place (emails, phones, Luhn-valid cards, IBANs, national ids, API keys, tokens).
# custom:
#   policy_id: acs.pii
#   policy_name: PII and secrets
#   rule_id: pii.redact
#   reason_code: pii_detected
modify_findings contains {
	"disposition": "modify",
	"reason_code": "pii_detected",
	"reasoning": sprintf("redacted %s", [concat(", ", sort(categories))]),
	"policy_id": "acs.pii",
	"policy_name": "PII and secrets",
	"rule_id": "pii.redact",
	"paradigm": "pii",
	"policy_data": {"categories": sort(categories), "paths": sort(paths)},
	"modifications": {"redactions": [{"path": p, "replacement": redacted_value(p)} | some p in sort(paths)]},
} if {
	count(matches) > 0
	count(deny_categories) == 0
}

# The module's findings, as the other modules give theirs (acs.decision reads the two parts apart).
findings contains f if some f in deny_findings

findings contains f if some f in modify_findings

valid(c) if {
	c.category == "in_aadhaar"
	aadhaar_valid(c.text)
}
