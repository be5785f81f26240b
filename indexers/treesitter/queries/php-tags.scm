; Tags for PHP (see python-tags.scm for the capture convention). `namespace App\Billing;`
; is the file's package; `use App\Util\Money;` imports a class; properties are named
; without their `$` so `$this->total` finds them.

(namespace_definition name: (namespace_name) @package)
(namespace_definition name: (namespace_name) @name body: (compound_statement)) @definition.module
(class_declaration name: (name) @name) @definition.class
(interface_declaration name: (name) @name) @definition.interface
(trait_declaration name: (name) @name) @definition.trait
(enum_declaration name: (name) @name) @definition.enum
(function_definition name: (name) @name return_type: (_)? @declared.type) @definition.function
(method_declaration name: (name) @name return_type: (_)? @declared.type body: (_))
  @definition.method
(method_declaration name: (name) @name return_type: (_)? @declared.type)
  @definition.method @declaration
(property_declaration
  type: (_)? @declared.type
  (property_element name: (variable_name (name) @name))) @definition.field
(property_promotion_parameter
  type: (_)? @declared.type
  name: (variable_name (name) @name)) @definition.field
(const_element (name) @name) @definition.constant
(program
  (expression_statement
    (assignment_expression
      left: (variable_name) @name
      right: (object_creation_expression [(name) (qualified_name)] @declared.type)))
  @definition.variable)

; --- references -------------------------------------------------------------------------------

(base_clause [(name) @name (qualified_name prefix: (_) @qualifier (name) @name)]
  @reference.inherit)
(class_interface_clause [(name) @name (qualified_name prefix: (_) @qualifier (name) @name)]
  @reference.inherit)
(use_declaration (name) @reference.inherit)

(function_call_expression function: [(name) @name
                                     (qualified_name prefix: (_) @qualifier (name) @name)])
  @reference.call
(member_call_expression object: (_) @qualifier name: (name) @name) @reference.call
(nullsafe_member_call_expression object: (_) @qualifier name: (name) @name) @reference.call
(scoped_call_expression scope: (_) @qualifier name: (name) @name) @reference.call
(scoped_call_expression scope: (name) @name) @reference.type
(class_constant_access_expression . (name) @name) @reference.type
(object_creation_expression [(name) @name (qualified_name prefix: (_) @qualifier (name) @name)])
  @reference.call
(member_access_expression object: (_) @qualifier name: (name) @name) @reference.other
(class_constant_access_expression (_) @qualifier . (name) @name .) @reference.other
(named_type [(name) @name (qualified_name prefix: (_) @qualifier (name) @name)])
  @reference.type

; --- imports ------------------------------------------------------------------------------------

(namespace_use_clause
  (qualified_name prefix: (namespace_name) @import.module (name) @import.name)
  alias: (name)? @import.alias) @import
[(require_expression) (require_once_expression) (include_expression) (include_once_expression)]
  @import.module @import.star

; --- locals ---------------------------------------------------------------------------------------

(simple_parameter type: (_) @local.type name: (variable_name) @local.definition)
(assignment_expression
  left: (variable_name) @local.definition
  right: (object_creation_expression [(name) (qualified_name)] @local.type))
(assignment_expression
  left: (variable_name) @local.definition
  right: [(scoped_call_expression) (function_call_expression) (member_call_expression)] @local.type)
(anonymous_function) @local.scope
(arrow_function) @local.scope
