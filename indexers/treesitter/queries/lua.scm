; Definitions for the chunker (see python.scm for the capture convention).
; `function M.new()` and `function M:price()` are named "M.new" and "M.price".

(function_declaration name: (identifier) @name) @definition.function

(function_declaration
  name: (dot_index_expression table: (_) @receiver field: (identifier) @name)) @definition.function

(function_declaration
  name: (method_index_expression table: (_) @receiver method: (identifier) @name)) @definition.method

(assignment_statement
  (variable_list name: [(identifier) (dot_index_expression)] @name)
  (expression_list value: (function_definition))) @definition.function
