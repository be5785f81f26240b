; Definitions for the chunker (see python.scm for the capture convention).

(function_definition
  declarator: (function_declarator
    declarator: (identifier) @name)) @definition.function

(function_definition
  declarator: (pointer_declarator
    declarator: (function_declarator
      declarator: (identifier) @name))) @definition.function

(function_definition
  declarator: (pointer_declarator
    declarator: (pointer_declarator
      declarator: (function_declarator
        declarator: (identifier) @name)))) @definition.function

(struct_specifier
  name: (type_identifier) @name
  body: (field_declaration_list)) @definition.class

(union_specifier
  name: (type_identifier) @name
  body: (field_declaration_list)) @definition.class

(enum_specifier
  name: (type_identifier) @name
  body: (enumerator_list)) @definition.class

; typedef struct { ... } name_t;
(type_definition
  type: [
    (struct_specifier !name body: (field_declaration_list))
    (union_specifier !name body: (field_declaration_list))
    (enum_specifier !name body: (enumerator_list))
  ]
  declarator: (type_identifier) @name) @definition.class
