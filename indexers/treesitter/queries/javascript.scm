; Definitions for the chunker (see python.scm for the capture convention).
; `export` wrappers, decorators and JSDoc above are attached by the chunker.

(class_declaration
  name: (identifier) @name) @definition.class

(function_declaration
  name: (identifier) @name) @definition.function

(generator_function_declaration
  name: (identifier) @name) @definition.function

(method_definition
  name: [(property_identifier) (private_property_identifier) (computed_property_name)] @name) @definition.method

(field_definition
  property: [(property_identifier) (private_property_identifier)] @name
  value: [(arrow_function) (function_expression)]) @definition.method

; const f = () => ..., const f = function () {...}, const C = class {...}
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
