; Tags for Elixir (see python-tags.scm for the capture convention). Everything is a call:
; `defmodule Shop.Cart` is a module, its `def`s are "Shop.Cart.add"; `alias Shop.Item`
; binds Item, `import Shop.Money` brings its functions in.

(call
  target: (identifier) @_keyword
  (arguments (alias) @name)
  (#eq? @_keyword "defmodule")) @definition.module
(call
  target: (identifier) @_keyword
  (arguments (alias) @name)
  (#eq? @_keyword "defprotocol")) @definition.interface
(call
  target: (identifier) @_keyword
  (arguments [(call target: (identifier) @name)
              (identifier) @name
              (binary_operator left: (call target: (identifier) @name))])
  (#match? @_keyword "^(def|defp|defdelegate|defguard|defguardp)$")) @definition.function
(call
  target: (identifier) @_keyword
  (arguments [(call target: (identifier) @name) (identifier) @name])
  (#match? @_keyword "^(defmacro|defmacrop)$")) @definition.macro

; --- references -------------------------------------------------------------------------------

(call target: (identifier) @name) @reference.call
(call target: (dot left: (_) @qualifier right: (identifier) @name)) @reference.call
(unary_operator operator: "&" operand: (binary_operator
  left: [(identifier) @name (call target: (dot left: (_) @qualifier right: (identifier) @name))]))
  @reference.other
(alias) @reference.type

(call
  target: (identifier) @_keyword
  (#match? @_keyword "^(alias|import|require|use)$")) @ignore.inside
(unary_operator operator: "@" operand: (call target: (identifier) @ignore))
(keywords (pair key: (keyword) @ignore))

; --- imports ------------------------------------------------------------------------------------

(call
  target: (identifier) @_keyword
  (arguments . (alias) @import.module .)
  (#match? @_keyword "^(alias|require)$")) @import
(call
  target: (identifier) @_keyword
  (arguments . (alias) @import.module (keywords (pair value: (alias) @import.alias)))
  (#eq? @_keyword "alias")) @import
(call
  target: (identifier) @import.star
  (arguments . (alias) @import.module)
  (#eq? @import.star "import")) @import

; --- locals ---------------------------------------------------------------------------------------

(binary_operator operator: "=" left: (identifier) @local.definition)
(call
  target: (identifier) @_keyword
  (arguments (call (arguments (identifier) @local.definition)))
  (#match? @_keyword "^(def|defp|defmacro|defmacrop)$"))
(stab_clause left: (arguments (identifier) @local.definition))
(anonymous_function) @local.scope
