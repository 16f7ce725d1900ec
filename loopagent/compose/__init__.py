"""What a person types becomes the message the model gets, alike in every front-end that prompts (the REPL,
`loop acp`): `@path` mentions attached (mentions.py), prompt templates expanded (templates.py), and the
notes that tell the model its approval mode changed (notes.py). Imports only the base modules."""
