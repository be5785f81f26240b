; Tags for TSX: TypeScript's, and components used as JSX elements.
; inherits: typescript-tags

(jsx_opening_element name: (identifier) @name) @reference.call
(jsx_self_closing_element name: (identifier) @name) @reference.call
