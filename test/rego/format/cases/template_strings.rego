package t

greeting := $"hello {  input.name  }!"

escaped := $"\{not} \"q\" {input.a+1} \u00e9"

raw := $`line one
  {input.x}
\{kept}`

nested := $"a {$"b {   count(input.xs)   }"} c"

msg(x) := $"{x   with input as {}}"
