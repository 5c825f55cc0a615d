package cases.if_literal_body

# After `if`, braces that read as one term are that term: a comprehension, or the left of a comparison.
named if {x | some x in input.names}

same if {x | some x in input.a} == {1}

braced if {
    {x | some x in input.names}
}

# A set literal is never false, so these braces are a body.
body if {input.x}

two if {input.x; input.y}
