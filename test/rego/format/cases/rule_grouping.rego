package cases.grouping

limit := 3
window := 10
mode := "strict"

low if input.n < limit
high if input.n > window
mid if {
	not low
	not high
}

default fallback := false
fallback if input.x
