; Tags for Bash (see python-tags.scm for the capture convention). Commands that name a
; function are calls; `source lib.sh` and `. lib.sh` bring a file's functions in.

(function_definition name: (word) @name) @definition.function
(program (variable_assignment name: (variable_name) @name) @definition.variable)
(program (declaration_command (variable_assignment name: (variable_name) @name)) @definition.variable)

(command name: (command_name (word) @name)) @reference.call
(simple_expansion (variable_name) @name) @reference.other
(expansion (variable_name) @name) @reference.other

(command
  name: (command_name (word) @_source)
  argument: [(word) (string (string_content)) (raw_string)] @import.module
  (#match? @_source "^(source|[.])$")) @import.star

(function_definition
  body: (compound_statement
    (declaration_command (variable_assignment name: (variable_name) @local.definition))))
(declaration_command (variable_assignment name: (variable_name) @local.definition))
(for_statement variable: (variable_name) @local.definition)
