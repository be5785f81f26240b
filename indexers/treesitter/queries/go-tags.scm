; Tags for Go (see python-tags.scm for the capture convention). Methods are named after
; their receiver type ("Store.Add"); a package is a folder.

(package_clause (package_identifier) @package)

(function_declaration
  name: (identifier) @name
  result: (_)? @declared.type) @definition.function
(method_declaration
  receiver: (parameter_list
    (parameter_declaration
      type: [(type_identifier) @receiver
             (pointer_type (type_identifier) @receiver)
             (generic_type type: (type_identifier) @receiver)
             (pointer_type (generic_type type: (type_identifier) @receiver))]))
  name: (field_identifier) @name
  result: (_)? @declared.type) @definition.method

(type_spec name: (type_identifier) @name type: (struct_type)) @definition.struct
(type_spec name: (type_identifier) @name type: (interface_type)) @definition.interface
(type_spec name: (type_identifier) @name) @definition.type
(type_alias name: (type_identifier) @name) @definition.type
(field_declaration name: (field_identifier) @name type: (_) @declared.type) @definition.field
(method_elem name: (field_identifier) @name result: (_)? @declared.type)
  @definition.method @declaration

(source_file (const_declaration (const_spec name: (identifier) @name) @definition.constant))
(source_file (var_declaration (var_spec name: (identifier) @name type: (_)? @declared.type) @definition.variable))
(source_file
  (var_declaration
    (var_spec
      name: (identifier) @name
      value: (expression_list . (call_expression function: (_) @declared.type))) @definition.variable))

(return_statement
  (expression_list .
    [(unary_expression operand: (composite_literal type: (_) @returned))
     (composite_literal type: (_) @returned)
     (call_expression function: (_) @returned)
     (identifier) @returned]))

; --- references -------------------------------------------------------------------------------

(call_expression function: (identifier) @reference.call)
(call_expression function: (selector_expression field: (field_identifier) @member.call))
(composite_literal type: (type_identifier) @reference.call)
(composite_literal type: (qualified_type name: (type_identifier) @member.call))
; an embedded field: its methods are promoted, like a base class's
(field_declaration !name type: [(type_identifier) @name
                                (pointer_type (type_identifier) @name)
                                (qualified_type package: (_) @qualifier name: (_) @name)]
  @reference.inherit)
(interface_type (type_elem [(type_identifier) @name
                            (qualified_type package: (_) @qualifier name: (_) @name)])
  @reference.inherit)

(type_identifier) @reference.type
(qualified_type name: (type_identifier) @member.type)
(identifier) @reference.other
(selector_expression field: (field_identifier) @member.other)

(keyed_element key: (literal_element (identifier) @ignore))

; --- imports ------------------------------------------------------------------------------------

(import_spec name: (package_identifier)? @import.alias path: (_) @import.module) @import
(import_spec name: (dot) @import.star path: (_) @import.module) @import

; --- locals ---------------------------------------------------------------------------------------

(parameter_declaration name: (identifier) @local.definition type: (_) @local.type)
(variadic_parameter_declaration name: (identifier) @local.definition)
(short_var_declaration left: (expression_list (identifier) @local.definition))
(short_var_declaration
  left: (expression_list . (identifier) @local.definition)
  right: (expression_list .
    [(unary_expression operand: (composite_literal type: (_) @local.type))
     (composite_literal type: (_) @local.type)
     (call_expression function: (_) @local.type)]))
(var_spec name: (identifier) @local.definition type: (_)? @local.type)
(type_switch_statement alias: (expression_list (identifier) @local.definition))
(receive_statement left: (expression_list (identifier) @local.definition) ":=")
(range_clause left: (expression_list (identifier) @local.definition))
(range_clause
  left: (expression_list (identifier) (identifier) @local.definition)
  right: (_) @local.iterable)
(func_literal) @local.scope
