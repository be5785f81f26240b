; Tags for Kotlin (see python-tags.scm for the capture convention). Companion objects are
; transparent ("Ledger.create"); extension functions are named after their receiver type.

(package_header (identifier) @package)

(class_declaration "interface" (type_identifier) @name) @definition.interface
(class_declaration (type_identifier) @name (enum_class_body)) @definition.enum
(class_declaration (type_identifier) @name) @definition.class
(object_declaration (type_identifier) @name) @definition.class
(function_declaration
  (receiver_type [(user_type (type_identifier) @receiver)
                  (nullable_type (user_type (type_identifier) @receiver))])
  (simple_identifier) @name) @definition.function
(function_declaration (simple_identifier) @name) @definition.function
(function_declaration
  (simple_identifier) @annotated
  (function_value_parameters) . [(user_type) (nullable_type)] @declared.type)

; properties: in a class body they are fields, at top level variables; primary-constructor
; `val`/`var` parameters are fields too
(class_body
  (property_declaration
    (variable_declaration (simple_identifier) @name [(user_type) (nullable_type)]? @declared.type))
  @definition.field)
(class_body
  (property_declaration
    (variable_declaration (simple_identifier) @name)
    (call_expression (simple_identifier) @declared.type)) @definition.field)
(class_parameter
  (binding_pattern_kind)
  (simple_identifier) @name
  [(user_type) (nullable_type)] @declared.type) @definition.field
(source_file
  (property_declaration
    (variable_declaration (simple_identifier) @name [(user_type) (nullable_type)]? @declared.type))
  @definition.variable)
(enum_entry (simple_identifier) @name) @definition.constant

(jump_expression
  [(call_expression (simple_identifier) @returned)
   (simple_identifier) @returned])

; --- references -------------------------------------------------------------------------------

(delegation_specifier
  [(user_type (type_identifier) @name)
   (constructor_invocation (user_type (type_identifier) @name))] @reference.inherit)

(call_expression (simple_identifier) @name) @reference.call
(call_expression
  (navigation_expression (_) @qualifier (navigation_suffix (simple_identifier) @name)))
  @reference.call
(call_expression
  (navigation_expression
    (call_expression (simple_identifier) @receiver.type) @qualifier
    (navigation_suffix (simple_identifier) @name))) @reference.call
(navigation_expression (_) @qualifier (navigation_suffix (simple_identifier) @name))
  @reference.other
(type_identifier) @reference.type
(simple_identifier) @reference.other

(package_header) @ignore.inside
(import_list) @ignore.inside
(value_argument (simple_identifier) @ignore "=")
(type_parameter (type_identifier) @ignore)
(assignment
  (directly_assignable_expression
    (this_expression)
    (navigation_suffix (simple_identifier) @ignore)))

; --- imports ------------------------------------------------------------------------------------

(import_header (identifier (simple_identifier) @import.name .) @import.module) @import
(import_header
  (identifier (simple_identifier) @import.name .) @import.module
  (import_alias (type_identifier) @import.alias)) @import
(import_header (identifier) @import.module (wildcard_import) @import.star) @import

; --- locals ---------------------------------------------------------------------------------------

(parameter (simple_identifier) @local.definition [(user_type) (nullable_type)] @local.type)
(property_declaration (variable_declaration (simple_identifier) @local.definition))
(property_declaration
  (variable_declaration (simple_identifier) @local.definition [(user_type) (nullable_type)] @local.type))
(property_declaration
  (variable_declaration (simple_identifier) @local.definition)
  [(call_expression (simple_identifier) @local.type)
   (call_expression (navigation_expression) @local.type)])
(for_statement (variable_declaration (simple_identifier) @local.definition) . (_) @local.iterable)
(lambda_parameters (variable_declaration (simple_identifier) @local.definition))
; a destructuring's names (`val (a, b) = …`, `for ((i, x) in …)`, `{ (k, v) -> … }`)
(multi_variable_declaration (variable_declaration (simple_identifier) @local.definition))
(catch_block . (simple_identifier) @local.definition)
(when_subject (variable_declaration (simple_identifier) @local.definition))
(lambda_literal) @local.scope
; a lambda given to a collection's method: `it`, or its one parameter, is an element; the
; second parameter of `fold` and `reduce` is one (`#set!` before the predicates: see
; swift-tags.scm)
(call_expression
  (navigation_expression (_) @local.iterable (navigation_suffix (simple_identifier) @_method))
  (call_suffix
    (annotated_lambda
      (lambda_literal
        (lambda_parameters . (variable_declaration (simple_identifier) @local.definition) .)?)
      @local.implicit))
  (#set! implicit "it")
  (#match? @_method "^(map|mapNotNull|flatMap|forEach|onEach|filter|filterNot|first|firstOrNull|last|lastOrNull|find|any|all|none|count|sumOf|maxBy|minBy|maxByOrNull|minByOrNull|sortedBy|sortedByDescending|groupBy|associateBy|associateWith|partition|takeWhile|dropWhile|distinctBy)$"))
(call_expression
  (navigation_expression (_) @local.iterable (navigation_suffix (simple_identifier) @_method))
  (call_suffix
    (annotated_lambda
      (lambda_literal
        (lambda_parameters (variable_declaration) . (variable_declaration (simple_identifier) @local.definition) .))))
  (#match? @_method "^(fold|reduce)$"))
(class_parameter . (simple_identifier) @local.constructor)
