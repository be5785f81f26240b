; Tags for Scala (see python-tags.scm for the capture convention). An object's defs are
; "Invoice.apply"; files of one package see each other's definitions.

(package_clause name: (package_identifier) @package)

(class_definition name: (identifier) @name) @definition.class
(object_definition name: (identifier) @name) @definition.class
(trait_definition name: (identifier) @name) @definition.trait
(enum_definition name: (identifier) @name) @definition.enum
(function_definition name: (identifier) @name return_type: (_)? @declared.type)
  @definition.function
(function_declaration name: (identifier) @name return_type: (_)? @declared.type)
  @definition.function
(template_body
  [(val_definition pattern: (identifier) @name type: (_)? @declared.type)
   (var_definition pattern: (identifier) @name type: (_)? @declared.type)
   (val_declaration name: (identifier) @name type: (_)? @declared.type)
   (var_declaration name: (identifier) @name type: (_)? @declared.type)] @definition.field)
(template_body
  (val_definition
    pattern: (identifier) @name
    value: [(instance_expression (type_identifier) @declared.type)
            (call_expression function: (_) @declared.type)]) @definition.field)
(class_parameter name: (identifier) @name type: (_) @declared.type) @definition.field
(compilation_unit
  [(val_definition pattern: (identifier) @name type: (_)? @declared.type)
   (var_definition pattern: (identifier) @name type: (_)? @declared.type)] @definition.variable)
(simple_enum_case name: (identifier) @name) @definition.constant

; --- references -------------------------------------------------------------------------------

(extends_clause type: [(type_identifier) @name (generic_type type: (type_identifier) @name)]
  @reference.inherit)

(call_expression function: (identifier) @name) @reference.call
(call_expression function: (field_expression value: (_) @qualifier field: (identifier) @name))
  @reference.call
(call_expression
  function: (field_expression
    value: (instance_expression (type_identifier) @receiver.type) @qualifier
    field: (identifier) @name)) @reference.call
(instance_expression (type_identifier) @name) @reference.call
(field_expression value: (_) @qualifier field: (identifier) @name) @reference.other
(type_identifier) @reference.type
(identifier) @reference.other

(import_declaration) @ignore.inside
(package_clause) @ignore.inside
(type_parameters (identifier) @ignore)
(assignment_expression left: (identifier) @ignore)

; --- imports ------------------------------------------------------------------------------------

; the last path segment names the import (the extractor keeps only the last one)
(import_declaration (identifier) @import.name) @import.module
(import_declaration (namespace_wildcard) @import.star) @import.module
(import_declaration
  (namespace_selectors
    [(identifier) @import.name
     (arrow_renamed_identifier name: (identifier) @import.name alias: (identifier) @import.alias)]))
  @import.module

; --- locals ---------------------------------------------------------------------------------------

(parameter name: (identifier) @local.definition type: (_) @local.type)
(val_definition pattern: (identifier) @local.definition)
(var_definition pattern: (identifier) @local.definition)
(val_definition pattern: (identifier) @local.definition type: (_) @local.type)
(val_definition
  pattern: (identifier) @local.definition
  value: [(instance_expression (type_identifier) @local.type)
          (call_expression function: (_) @local.type)])
(lambda_expression) @local.scope
(bindings (binding name: (identifier) @local.definition))
(lambda_expression parameters: (identifier) @local.definition)
; the names a pattern binds: a lowercase name is a variable, an uppercase one a value to
; compare with (`case Nil`); in `val (a, b)`, `for ((i, x) <- …; y = …)`, `head :: tail`,
; `Some(v)`, `n: Int`, `all @ …`
((tuple_pattern (identifier) @local.definition) (#match? @local.definition "^[a-z_]"))
((enumerator . (identifier) @local.definition) (#match? @local.definition "^[a-z_]"))
((infix_pattern left: (identifier) @local.definition) (#match? @local.definition "^[a-z_]"))
((infix_pattern right: (identifier) @local.definition) (#match? @local.definition "^[a-z_]"))
((case_class_pattern pattern: (identifier) @local.definition)
 (#match? @local.definition "^[a-z_]"))
(typed_pattern pattern: (identifier) @local.definition type: (_) @local.type)
(capture_pattern name: (identifier) @local.definition)
(class_parameter . (identifier) @local.constructor)
