package cases.infix

is_even(n) := n % 2 == 0

total := plus(1, mul(2, 3))

scaled := (1 + 2) * 3

ok if {
	x := input.a + input.b * 2
	input.count * 2 > 10
	y := [n | some n in input.xs; n + 1 > 2]
	x + y[0] in input.allowed
}
