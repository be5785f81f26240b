; Definitions for the chunker (see python.scm for the capture convention).
; Out-of-class definitions (void Client::send()) are named "Client.send".
; template<...> wrappers are captured so the template line stays with its definition.

(namespace_definition
  name: [(namespace_identifier) (nested_namespace_specifier)] @name) @definition.namespace

(class_specifier
  name: [(type_identifier) (qualified_identifier) (template_type)] @name
  body: (field_declaration_list)) @definition.class

(struct_specifier
  name: [(type_identifier) (qualified_identifier) (template_type)] @name
  body: (field_declaration_list)) @definition.class

(union_specifier
  name: (type_identifier) @name
  body: (field_declaration_list)) @definition.class

(enum_specifier
  name: (type_identifier) @name
  body: (enumerator_list)) @definition.class

(function_definition
  declarator: (function_declarator
    declarator: [(identifier) (field_identifier) (qualified_identifier) (destructor_name) (operator_name)] @name)) @definition.function

(function_definition
  declarator: (pointer_declarator
    declarator: (function_declarator
      declarator: [(identifier) (field_identifier) (qualified_identifier) (operator_name)] @name))) @definition.function

(function_definition
  declarator: (reference_declarator
    (function_declarator
      declarator: [(identifier) (field_identifier) (qualified_identifier) (operator_name)] @name))) @definition.function

(template_declaration
  (function_definition
    declarator: (function_declarator
      declarator: [(identifier) (field_identifier) (qualified_identifier) (destructor_name) (operator_name)] @name))) @definition.function

(template_declaration
  (class_specifier
    name: [(type_identifier) (qualified_identifier) (template_type)] @name
    body: (field_declaration_list))) @definition.class

(template_declaration
  (struct_specifier
    name: [(type_identifier) (qualified_identifier) (template_type)] @name
    body: (field_declaration_list))) @definition.class
