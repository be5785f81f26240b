; Tags for TypeScript (see python-tags.scm for the capture convention); tsx-tags.scm adds JSX.
; inherits: ecmascript-tags

(class_declaration name: (type_identifier) @name) @definition.class
(abstract_class_declaration name: (type_identifier) @name) @definition.class
(interface_declaration name: (type_identifier) @name) @definition.interface
(enum_declaration name: (identifier) @name) @definition.enum
(type_alias_declaration name: (type_identifier) @name) @definition.type
(internal_module name: [(identifier) (nested_identifier)] @name) @definition.module
(function_signature name: (identifier) @name) @definition.function @declaration
(method_signature name: [(property_identifier) (private_property_identifier)] @name)
  @definition.method @declaration
(abstract_method_signature
  name: [(property_identifier) (private_property_identifier)] @name) @definition.method @declaration
(public_field_definition
  name: [(property_identifier) (private_property_identifier)] @name
  value: [(arrow_function) (function_expression)]) @definition.method
(public_field_definition
  name: [(property_identifier) (private_property_identifier)] @name
  type: (type_annotation (_) @declared.type)?) @definition.field
(property_signature
  name: (property_identifier) @name
  type: (type_annotation (_) @declared.type)?) @definition.field
; a field without a declared type is of the class its value constructs (`store = new Store()`)
(public_field_definition
  name: [(property_identifier) (private_property_identifier)] @annotated
  value: (new_expression constructor: (_) @declared.type))

; declared types: return types, parameter properties (constructor(private c: Client))
(function_declaration
  name: (identifier) @annotated
  return_type: (type_annotation (_) @declared.type))
(method_definition
  name: (property_identifier) @annotated
  return_type: (type_annotation (_) @declared.type))
(method_signature
  name: (property_identifier) @annotated
  return_type: (type_annotation (_) @declared.type))
(variable_declarator
  name: (identifier) @annotated
  value: [(arrow_function return_type: (type_annotation (_) @declared.type))
          (function_expression return_type: (type_annotation (_) @declared.type))])
(program
  [(lexical_declaration (variable_declarator
     name: (identifier) @annotated type: (type_annotation (_) @declared.type)))
   (variable_declaration (variable_declarator
     name: (identifier) @annotated type: (type_annotation (_) @declared.type)))])
(required_parameter
  (accessibility_modifier)
  pattern: (identifier) @name
  type: (type_annotation (_) @declared.type)) @definition.field

; --- references ---------------------------------------------------------------------------------

(extends_clause
  value: [(identifier) @name
          (member_expression object: (_) @qualifier property: (property_identifier) @name)]
  @reference.inherit)
(implements_clause
  [(type_identifier) @name
   (generic_type name: (type_identifier) @name)
   (nested_type_identifier module: (_) @qualifier name: (type_identifier) @name)]
  @reference.inherit)
(extends_type_clause
  type: [(type_identifier) @name (generic_type name: (type_identifier) @name)] @reference.inherit)
(type_identifier) @reference.type
(nested_type_identifier module: (_) @qualifier name: (type_identifier) @name) @reference.type
(interface_declaration name: (type_identifier) @ignore)
(class_declaration name: (type_identifier) @ignore)
(type_parameter name: (type_identifier) @ignore)

; --- locals -------------------------------------------------------------------------------------

(required_parameter pattern: (identifier) @local.definition)
(optional_parameter pattern: (identifier) @local.definition)
(required_parameter
  pattern: (identifier) @local.definition
  type: (type_annotation (_) @local.type))
(optional_parameter
  pattern: (identifier) @local.definition
  type: (type_annotation (_) @local.type))
(variable_declarator
  name: (identifier) @local.definition
  type: (type_annotation (_) @local.type))
(arrow_function parameter: (identifier) @local.definition)

; every identifier may be a use (parameters and locals are dropped by scope): TypeScript's
; types hold uses where its grammar has no expression (`ns.Type`, `typeof x`)
(identifier) @reference.other
