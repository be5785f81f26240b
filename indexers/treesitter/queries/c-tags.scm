; Tags for C (see python-tags.scm for the capture convention); cpp-tags.scm builds on these.
; An #include brings a header's names, and the sources beside it that share its stem.

(function_definition
  type: (_)? @declared.type
  declarator: [(function_declarator declarator: (identifier) @name)
               (pointer_declarator declarator: (function_declarator declarator: (identifier) @name))
               (pointer_declarator
                 declarator: (pointer_declarator
                   declarator: (function_declarator declarator: (identifier) @name)))])
  @definition.function
(struct_specifier name: (type_identifier) @name body: (field_declaration_list)) @definition.struct
(union_specifier name: (type_identifier) @name body: (field_declaration_list)) @definition.struct
(enum_specifier name: (type_identifier) @name body: (enumerator_list)) @definition.enum
(type_definition
  type: [(struct_specifier !name body: (field_declaration_list))
         (union_specifier !name body: (field_declaration_list))]
  declarator: (type_identifier) @name) @definition.struct
(type_definition
  type: (enum_specifier !name body: (enumerator_list))
  declarator: (type_identifier) @name) @definition.enum
(type_definition type: (_) @declared.type declarator: (type_identifier) @name) @definition.type
(field_declaration
  type: (_) @declared.type
  declarator: [(field_identifier) @name
               (pointer_declarator declarator: (field_identifier) @name)
               (array_declarator declarator: (field_identifier) @name)]) @definition.field
(enumerator name: (identifier) @name) @definition.constant
(preproc_def name: (identifier) @name) @definition.macro
(preproc_function_def name: (identifier) @name) @definition.macro
(translation_unit
  (declaration
    type: (_) @declared.type
    declarator: [(identifier) @name
                 (init_declarator declarator: (identifier) @name)
                 (init_declarator declarator: (pointer_declarator declarator: (identifier) @name))])
  @definition.variable)

; --- references -------------------------------------------------------------------------------

(call_expression function: (identifier) @reference.call)
(call_expression
  function: (field_expression argument: (_) @qualifier field: (field_identifier) @name))
  @reference.call
(field_expression field: (field_identifier) @member.other)
(type_identifier) @reference.type
(identifier) @reference.other
(sizeof_expression type: (type_descriptor type: (type_identifier) @name)) @reference.type

(preproc_include) @ignore.inside
(initializer_pair designator: (field_designator (field_identifier) @ignore))

; --- imports ------------------------------------------------------------------------------------

(preproc_include path: (_) @import.module) @import.star

; --- locals ---------------------------------------------------------------------------------------

(parameter_declaration
  type: (_) @local.type
  declarator: [(identifier) @local.definition
               (pointer_declarator declarator: (identifier) @local.definition)
               (pointer_declarator declarator: (pointer_declarator declarator: (identifier) @local.definition))
               (array_declarator declarator: (identifier) @local.definition)])
(declaration
  type: (_) @local.type
  declarator: [(identifier) @local.definition
               (init_declarator declarator: (identifier) @local.definition)
               (pointer_declarator declarator: (identifier) @local.definition)
               (init_declarator declarator: (pointer_declarator declarator: (identifier) @local.definition))
               (array_declarator declarator: (identifier) @local.definition)])
