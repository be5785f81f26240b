; Tags for C++ (see python-tags.scm for the capture convention), on top of C's.
; Out-of-class definitions (void Client::send()) are "Client.send", like in-class ones.
; inherits: c-tags

(namespace_definition name: [(namespace_identifier) (nested_namespace_specifier)] @name)
  @definition.module
(class_specifier name: [(type_identifier) (template_type name: (type_identifier))] @name
  body: (field_declaration_list)) @definition.class
(struct_specifier name: (template_type name: (type_identifier) @name)
  body: (field_declaration_list)) @definition.struct
(function_definition
  declarator: [(function_declarator
                 declarator: [(qualified_identifier) (field_identifier) (destructor_name)
                              (operator_name)] @name)
               (pointer_declarator
                 declarator: (function_declarator
                   declarator: [(qualified_identifier) (field_identifier)] @name))
               (reference_declarator
                 (function_declarator
                   declarator: [(identifier) (qualified_identifier) (field_identifier)] @name))])
  @definition.function
(field_declaration
  type: (_)? @declared.type
  declarator: (function_declarator
    declarator: [(field_identifier) (destructor_name) (operator_name)] @name))
  @definition.method @declaration
; …returning a pointer or a reference (`const char* what() const;`, `Shape& get();`)
(field_declaration
  type: (_)? @declared.type
  declarator: [(pointer_declarator
                 declarator: (function_declarator
                   declarator: [(field_identifier) (operator_name)] @name))
               (reference_declarator
                 (function_declarator declarator: [(field_identifier) (operator_name)] @name))])
  @definition.method @declaration
(field_declaration_list
  (declaration
    declarator: (function_declarator declarator: [(identifier) (destructor_name)] @name))
  @definition.method @declaration)
(declaration
  type: (_) @declared.type
  declarator: (function_declarator declarator: (identifier) @name)) @definition.function @declaration
(declaration
  type: (_) @declared.type
  declarator: [(pointer_declarator declarator: (function_declarator declarator: (identifier) @name))
               (reference_declarator (function_declarator declarator: (identifier) @name))])
  @definition.function @declaration
(function_definition
  type: (_) @declared.type
  declarator: (function_declarator declarator: (qualified_identifier) @annotated))
(alias_declaration name: (type_identifier) @name type: (_) @declared.type) @definition.type

; --- references -------------------------------------------------------------------------------

(base_class_clause [(type_identifier) @name
                    (template_type name: (type_identifier) @name)
                    (qualified_identifier scope: (_) @qualifier name: (type_identifier) @name)]
  @reference.inherit)
(call_expression
  function: (qualified_identifier scope: (_) @qualifier name: (identifier) @name)) @reference.call
(call_expression
  function: (template_function name: (identifier) @name)) @reference.call
(new_expression type: [(type_identifier) @name
                       (qualified_identifier scope: (_) @qualifier name: (type_identifier) @name)])
  @reference.call
(qualified_identifier name: [(identifier) (type_identifier)] @member.other)
(qualified_identifier scope: (namespace_identifier) @reference.type)
(field_initializer (field_identifier) @name) @reference.other
(function_definition
  declarator: (function_declarator declarator: (qualified_identifier name: (_) @ignore)))
(using_declaration) @ignore.inside
(namespace_definition name: (_) @ignore)
(template_parameter_list) @ignore.inside

; --- locals ---------------------------------------------------------------------------------------

(parameter_declaration
  type: (_) @local.type
  declarator: (reference_declarator (identifier) @local.definition))
(declaration
  type: (placeholder_type_specifier)
  declarator: (init_declarator
    declarator: (identifier) @local.definition
    value: [(call_expression function: (_) @local.type)
            (new_expression type: (_) @local.type)]))
(for_range_loop declarator: (identifier) @local.definition right: (_) @local.iterable)
(for_range_loop
  declarator: (reference_declarator (identifier) @local.definition) right: (_) @local.iterable)
(structured_binding_declarator (identifier) @local.definition)  ; auto [a, b] = …
(lambda_expression) @local.scope
