; Definitions shared by JavaScript and TypeScript (both grammars have these nodes);
; javascript.scm and typescript.scm pull them in with `; inherits: ecmascript`.

(function_declaration
  name: (identifier) @name) @definition.function

(generator_function_declaration
  name: (identifier) @name) @definition.function

(method_definition
  name: [(property_identifier) (private_property_identifier) (computed_property_name)] @name) @definition.method

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
