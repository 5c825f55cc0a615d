package cases.every

all_pos if {
	every x in input.xs { x > 0 }
	every k, v in input.m { k != v; v > 1 }
	every y in input.ys {
		y < 9
	}
}

any_big := [x | some x in input.xs
  x > 9]
