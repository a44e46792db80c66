"""A tiny random causal LM and a byte-level BPE tokenizer made here, from a config: nothing is
downloaded from a hub (the tests run with HF_HUB_OFFLINE=1). The tokenizer round-trips any text
exactly, so a scripted completion reaches the reward as the same text."""

from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
from transformers import GPT2Config, GPT2LMHeadModel, PreTrainedTokenizerFast

EOS = "<|endoftext|>"


def tokenizer(texts, vocab_size=600):
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    tok.train_from_iterator(texts, trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=[EOS], show_progress=False,
                                                       initial_alphabet=pre_tokenizers.ByteLevel.alphabet()))
    return PreTrainedTokenizerFast(tokenizer_object=tok, eos_token=EOS, pad_token=EOS, clean_up_tokenization_spaces=False)


def model(tok, n_positions=4096, seed=0):
    import torch
    torch.manual_seed(seed)
    cfg = GPT2Config(vocab_size=len(tok), n_positions=n_positions, n_embd=32, n_layer=2, n_head=2,
                     bos_token_id=tok.eos_token_id, eos_token_id=tok.eos_token_id, pad_token_id=tok.pad_token_id)
    return GPT2LMHeadModel(cfg)
