; Definitions for the chunker (see python.scm for the capture convention).
; Used for both typescript and tsx. Interfaces, enums and namespaces count as classes;
; type aliases stay module code.

(class_declaration
  name: (type_identifier) @name) @definition.class

(abstract_class_declaration
  name: (type_identifier) @name) @definition.class

(interface_declaration
  name: (type_identifier) @name) @definition.class

(enum_declaration
  name: (identifier) @name) @definition.class

(internal_module
  name: [(identifier) (nested_identifier)] @name) @definition.namespace

(function_declaration
  name: (identifier) @name) @definition.function

(generator_function_declaration
  name: (identifier) @name) @definition.function

(function_signature
  name: (identifier) @name) @definition.function

(method_definition
  name: [(property_identifier) (private_property_identifier) (computed_property_name)] @name) @definition.method

(abstract_method_signature
  name: [(property_identifier) (private_property_identifier)] @name) @definition.method

(public_field_definition
  name: [(property_identifier) (private_property_identifier)] @name
  value: [(arrow_function) (function_expression)]) @definition.method

(lexical_declaration
  (variable_declarator
    name: (identifier) @name
    value: [(arrow_function) (function_expression) (generator_function)])) @definition.function

(variable_declaration
  (variable_declarator
    name: (identifier) @name
    value: [(arrow_function) (function_expression) (generator_function)])) @definition.function

(lexical_declaration
  (variable_declarator
    name: (identifier) @name
    value: (class))) @definition.class

; CommonJS and prototype style: Model.prototype.save = function () {...},
; exports.parse = (s) => ..., module.exports.run = async function () {...}
(expression_statement
  (assignment_expression
    left: (member_expression) @name
    right: [(arrow_function) (function_expression) (generator_function)])) @definition.function

; an object literal's methods: { save() {...}, load: function () {...}, run: () => ... }
(pair
  key: [(property_identifier) (string) (computed_property_name)] @name
  value: [(arrow_function) (function_expression) (generator_function)]) @definition.function
