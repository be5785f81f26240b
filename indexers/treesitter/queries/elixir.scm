; Definitions for the chunker (see python.scm for the capture convention).
; A module is a namespace (its functions stay functions): "Shop.Cart.add".

(call
  target: (identifier) @_keyword
  (arguments (alias) @name)
  (#match? @_keyword "^(defmodule|defprotocol)$")) @definition.namespace

(call
  target: (identifier) @_keyword
  (arguments [(call target: (identifier) @name)
              (identifier) @name
              (binary_operator left: (call target: (identifier) @name))])
  (#match? @_keyword "^(def|defp|defmacro|defmacrop|defguard|defguardp|defdelegate)$")) @definition.function
