; Tags for Lua (see python-tags.scm for the capture convention). `function M.new()` and
; `function M:price()` are "M.new" and "M.price"; `require("a.b")` imports a/b.lua.

(function_declaration name: (identifier) @name) @definition.function
(function_declaration
  name: (dot_index_expression table: (_) @receiver field: (identifier) @name)) @definition.function
(function_declaration
  name: (method_index_expression table: (_) @receiver method: (identifier) @name))
  @definition.method
(assignment_statement
  (variable_list name: [(identifier) (dot_index_expression)] @name)
  (expression_list value: (function_definition))) @definition.function
; a module's variable made by a call (its declared type: the callee) or by
; `setmetatable(t, Class)` (Class); first, so that it wins over the plain one below
(chunk
  (variable_declaration
    (assignment_statement
      (variable_list name: (identifier) @name)
      (expression_list
        value: (function_call name: [(identifier) (dot_index_expression)] @declared.type))))
  @definition.variable
  (#not-match? @declared.type "^(require|setmetatable)$"))
(chunk
  (variable_declaration
    (assignment_statement
      (variable_list name: (identifier) @name)
      (expression_list
        value: (function_call
          name: (identifier) @_meta
          arguments: (arguments (_) . (identifier) @declared.type .)))))
  @definition.variable
  (#eq? @_meta "setmetatable"))
(chunk
  (variable_declaration
    (assignment_statement (variable_list name: (identifier) @name) (expression_list value: (_) @_value)))
  @definition.variable
  (#not-match? @_value "^require"))

; --- references -------------------------------------------------------------------------------

(function_call name: (identifier) @name) @reference.call
(function_call name: (dot_index_expression table: (_) @qualifier field: (identifier) @name))
  @reference.call
(function_call name: (method_index_expression table: (_) @qualifier method: (identifier) @name))
  @reference.call
(dot_index_expression table: (_) @qualifier field: (identifier) @name) @reference.other
(identifier) @reference.other

(function_declaration name: (dot_index_expression field: (identifier) @ignore))
(function_declaration name: (method_index_expression method: (identifier) @ignore))
(assignment_statement
  (variable_list name: (dot_index_expression field: (identifier) @ignore))
  (expression_list value: (function_definition)))
(field name: (identifier) @ignore)

; --- imports ------------------------------------------------------------------------------------

(variable_declaration
  (assignment_statement
    (variable_list name: (identifier) @import.alias)
    (expression_list
      value: (function_call
        name: (identifier) @_require
        arguments: (arguments (string content: (string_content) @import.module)))))
  (#eq? @_require "require")) @import

; --- locals ---------------------------------------------------------------------------------------

(parameters name: (identifier) @local.definition)
(variable_declaration (assignment_statement (variable_list name: (identifier) @local.definition)))
(variable_declaration (variable_list name: (identifier) @local.definition))
(for_generic_clause (variable_list name: (identifier) @local.definition))
(for_numeric_clause name: (identifier) @local.definition)
(function_definition) @local.scope
; a local made by a call is of the callee's type; by `setmetatable(t, Class)`, of Class
(variable_declaration
  (assignment_statement
    (variable_list name: (identifier) @local.definition)
    (expression_list
      value: (function_call name: [(identifier) (dot_index_expression)] @local.type)))
  (#not-match? @local.type "^(require|setmetatable)$"))
(variable_declaration
  (assignment_statement
    (variable_list name: (identifier) @local.definition)
    (expression_list
      value: (function_call
        name: (identifier) @_meta
        arguments: (arguments (_) . (identifier) @local.type .))))
  (#eq? @_meta "setmetatable"))

; --- returns ----------------------------------------------------------------------------------

; what a function returns first: a callee's result or a local (`return self`)
(return_statement
  (expression_list . (function_call name: [(identifier) (dot_index_expression)] @returned))
  (#not-match? @returned "^require$"))
(return_statement (expression_list . (identifier) @returned))
