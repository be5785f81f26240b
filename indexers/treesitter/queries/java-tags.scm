; Tags for Java (see python-tags.scm for the capture convention). Files of one package see
; each other's classes; a bare name inside a class may be one of its members.

(package_declaration [(scoped_identifier) (identifier)] @package)

(class_declaration name: (identifier) @name) @definition.class
(interface_declaration name: (identifier) @name) @definition.interface
(enum_declaration name: (identifier) @name) @definition.enum
(record_declaration name: (identifier) @name) @definition.class
(annotation_type_declaration name: (identifier) @name) @definition.interface
(method_declaration type: (_) @declared.type name: (identifier) @name !body)
  @definition.method @declaration
(method_declaration type: (_) @declared.type name: (identifier) @name) @definition.method
(constructor_declaration name: (identifier) @name) @definition.method
(field_declaration
  type: (_) @declared.type
  declarator: (variable_declarator name: (identifier) @name)) @definition.field
(enum_constant name: (identifier) @name) @definition.constant
(record_declaration
  parameters: (formal_parameters
    (formal_parameter type: (_) @declared.type name: (identifier) @name) @definition.field))

; --- references -------------------------------------------------------------------------------

(superclass [(type_identifier) @name
             (generic_type (type_identifier) @name)
             (scoped_type_identifier (_) @qualifier . (type_identifier) @name .)] @reference.inherit)
(super_interfaces (type_list [(type_identifier) @name
                              (generic_type (type_identifier) @name)] @reference.inherit))
(extends_interfaces (type_list [(type_identifier) @name
                                (generic_type (type_identifier) @name)] @reference.inherit))

(method_invocation !object name: (identifier) @name) @reference.call
(method_invocation object: (_) @qualifier name: (identifier) @name) @reference.call
(method_invocation
  object: (object_creation_expression type: (_) @receiver.type) @qualifier
  name: (identifier) @name) @reference.call
; Store.create().save(), store.first().label(): the receiver is what the call returns
(method_invocation
  object: (method_invocation) @receiver.type @qualifier
  name: (identifier) @name) @reference.call
(object_creation_expression type: [(type_identifier) @name
                                   (generic_type (type_identifier) @name)]) @reference.call
(method_reference (_) @qualifier . (identifier) @name .) @reference.other

(type_identifier) @reference.type
(identifier) @reference.other
(field_access object: (_) @qualifier field: (identifier) @name) @reference.other
(marker_annotation name: (identifier) @name) @reference.type
(annotation name: (identifier) @name) @reference.type

(import_declaration) @ignore.inside
(package_declaration) @ignore.inside
(type_parameter (type_identifier) @ignore)
((type_identifier) @ignore (#eq? @ignore "var"))  ; a local's inferred type, no class
(assignment_expression
  left: (field_access object: (this) field: (identifier) @ignore))

; --- imports ------------------------------------------------------------------------------------

(import_declaration
  (scoped_identifier scope: (_) @import.module name: (identifier) @import.name) .) @import
(import_declaration (scoped_identifier) @import.module (asterisk) @import.star) @import

; --- locals ---------------------------------------------------------------------------------------

(formal_parameter type: (_) @local.type name: (identifier) @local.definition)
(spread_parameter (_) @local.type (variable_declarator name: (identifier) @local.definition))
(local_variable_declaration
  type: (_) @local.type
  declarator: (variable_declarator name: (identifier) @local.definition)
  (#not-eq? @local.type "var"))
(local_variable_declaration
  type: (type_identifier) @_var
  declarator: (variable_declarator
    name: (identifier) @local.definition
    value: [(object_creation_expression type: (_) @local.type)
            (method_invocation) @local.type])
  (#eq? @_var "var"))
(enhanced_for_statement type: (_) @local.type name: (identifier) @local.definition)
(catch_formal_parameter (catch_type) @local.type name: (identifier) @local.definition)
; a `var` local whatever its value, a resource (`try (var r = …)`), a pattern's names
; (`x instanceof Item it`, `o instanceof Point(int x, var y)`)
(local_variable_declaration declarator: (variable_declarator name: (identifier) @local.definition))
(resource name: (identifier) @local.definition)
(resource type: (_) @local.type name: (identifier) @local.definition (#not-eq? @local.type "var"))
(instanceof_expression right: (_) @local.type name: (identifier) @local.definition)
(record_pattern_component (identifier) @local.definition)
(lambda_expression parameters: (identifier) @local.definition)
(lambda_expression parameters: (inferred_parameters (identifier) @local.definition))
(lambda_expression) @local.scope
