; Tags for C# (see python-tags.scm for the capture convention). A braced namespace
; qualifies what it holds ("Acme.Billing.Ledger"); `using A.B;` brings a namespace's names.

(file_scoped_namespace_declaration name: [(identifier) (qualified_name)] @package)
(namespace_declaration name: [(identifier) (qualified_name)] @package)
(namespace_declaration name: [(identifier) (qualified_name)] @name) @definition.module

(class_declaration name: (identifier) @name) @definition.class
(record_declaration name: (identifier) @name) @definition.class
(struct_declaration name: (identifier) @name) @definition.struct
(interface_declaration name: (identifier) @name) @definition.interface
(enum_declaration name: (identifier) @name) @definition.enum
(method_declaration returns: (_) @declared.type name: (identifier) @name body: (_))
  @definition.method
(method_declaration returns: (_) @declared.type name: (identifier) @name) @definition.method @declaration
(constructor_declaration name: (identifier) @name) @definition.method
(destructor_declaration name: (identifier) @name) @definition.method
(local_function_statement name: (identifier) @name) @definition.function
(property_declaration type: (_) @declared.type name: (identifier) @name) @definition.field
(field_declaration
  (variable_declaration type: (_) @declared.type (variable_declarator name: (identifier) @name)))
  @definition.field
(enum_member_declaration name: (identifier) @name) @definition.constant

; --- references -------------------------------------------------------------------------------

(base_list [(identifier) @name
            (generic_name (identifier) @name)
            (qualified_name qualifier: (_) @qualifier name: (identifier) @name)] @reference.inherit)

(invocation_expression function: (identifier) @name) @reference.call
(invocation_expression
  function: (member_access_expression name: (identifier) @name)) @reference.call @qualifier.before
(invocation_expression
  function: (member_access_expression
    expression: (object_creation_expression type: (_) @receiver.type)
    name: (identifier) @name)) @reference.call
(object_creation_expression type: [(identifier) @name (generic_name (identifier) @name)])
  @reference.call
(object_creation_expression
  type: (qualified_name qualifier: (_) @qualifier name: (identifier) @name)) @reference.call
(member_access_expression name: (identifier) @name) @reference.other @qualifier.before
(qualified_name qualifier: (_) @qualifier name: (identifier) @name) @reference.type
(identifier) @reference.other
(attribute name: (identifier) @name) @reference.type

(using_directive) @ignore.inside
(file_scoped_namespace_declaration) @ignore.inside
(namespace_declaration name: (_) @ignore.inside)
(type_parameter_list) @ignore.inside
(argument name: (identifier) @ignore)
(assignment_expression
  left: (member_access_expression "this" name: (identifier) @ignore))

; --- imports ------------------------------------------------------------------------------------

(using_directive . [(identifier) (qualified_name)] @import.module .) @import.star
(using_directive name: (identifier) @import.alias [(identifier) (qualified_name)] @import.module)
  @import
(using_directive "static" [(identifier) (qualified_name)] @import.module) @import.star

; --- locals ---------------------------------------------------------------------------------------

(parameter type: (_) @local.type name: (identifier) @local.definition)
(variable_declaration
  type: (_) @local.type
  (variable_declarator name: (identifier) @local.definition)
  (#not-eq? @local.type "var"))
(variable_declaration
  type: (implicit_type)
  (variable_declarator
    name: (identifier) @local.definition
    [(object_creation_expression type: (_) @local.type)
     (invocation_expression function: (_) @local.type)]))
(variable_declaration (variable_declarator name: (identifier) @local.definition))
(foreach_statement type: (_) @local.type left: (identifier) @local.definition)
(catch_declaration type: (_) @local.type name: (identifier) @local.definition)
(lambda_expression) @local.scope
(lambda_expression parameters: (implicit_parameter) @local.definition)
(parameter name: (identifier) @local.definition)  ; a lambda's, untyped
; the names a deconstruction or a pattern binds: `var (a, b) = …`, `(int c, var d) = …`,
; `out var q`, `foreach (var (k, v) in …)`, `x is Item it`, `{ X: var px }`
(tuple_pattern name: (identifier) @local.definition)
(declaration_expression name: (identifier) @local.definition)
(declaration_pattern name: (identifier) @local.definition)
(declaration_pattern
  type: (_) @local.type name: (identifier) @local.definition (#not-eq? @local.type "var"))
