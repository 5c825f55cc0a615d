package cases.parenthesised_refs

# A call in parentheses keeps them when a ref continues it; other heads need none.
first_of_union := (input.a | input.b)[_]

shared contains k if {
    some k
    (input.a & input.b)[k]
}

counted := (count(input.xs)).n

plain_call := count(input.xs)[0]

array_head := ([1, 2])[0]

var_head := (x).y
