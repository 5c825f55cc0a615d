package cases.withs

test_a if {
    allow with input as {"u": 1} with data.x as 2
}

test_b if {
    allow with input as {"u": 1}
      with data.x as 2 with data.y as 3
  with data.z as 4
}
