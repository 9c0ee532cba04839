// htm bound to Preact: templates become virtual nodes whose strings are always text nodes, so
// whatever an agent or a repository wrote is shown as text (the board never sets innerHTML).
export { html } from 'htm/preact';
