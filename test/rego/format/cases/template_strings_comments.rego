package t

a := $"{# before the expression
       input.x} and {input.y # after it
} end"

b := $"{
# above a scalar
42
} {input.z
# between it and the brace
} done"

c := $"{input.p}{# first
input.q}"

e if {
	msg := $"id {# the id
	input.id}"
	msg != ""
}

h := $`line
{input.b # note
} tail`

i := $"{# first line
# second line
input.i}"

m := $"{[1,
2]} {{"k":
1}}"

n if {
	x := $`{[y |
	y := input.ys[_]]}`
	x != ""
}
