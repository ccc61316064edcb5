// The ChatML chat template (<|im_start|>role\n content <|im_end|>\n, then an open assistant turn), in
// tokenizer_config.json's Jinja form: the template the built-in tiny model ships (src/pretrain) and the
// model-file test fixtures use. One copy, so both render prompts the same way.

export const CHATML_TEMPLATE =
  "{% for message in messages %}{{ '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' + '\\n' }}{% endfor %}" +
  "{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}";
