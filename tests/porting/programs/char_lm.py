"""A character-level bigram model (counts, then a one-layer net trained by hand), and an MLP
language model (makemore part 2) trained from a Dataset through a DataLoader, saved, loaded,
and sampled with topk and multinomial."""

import os

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset

WORDS = ["emma", "olivia", "ava", "isabella", "sophia", "mia", "amelia", "harper", "evelyn",
         "abigail", "emily", "ella", "luna", "aria", "chloe", "layla"]  # fmt: skip


class CharDataset(Dataset):
    def __init__(self, words, stoi, block_size):
        xs, ys = [], []
        for w in words:
            context = [0] * block_size
            for ch in w + ".":
                ix = stoi[ch]
                xs.append(context)
                ys.append(ix)
                context = context[1:] + [ix]
        self.xs, self.ys = xs, ys

    def __len__(self):
        return len(self.xs)

    def __getitem__(self, i):
        return torch.tensor(self.xs[i]), torch.tensor(self.ys[i])


class MLPLM(nn.Module):
    def __init__(self, vocab_size, block_size, n_embd, n_hidden):
        super().__init__()
        self.emb = nn.Embedding(vocab_size, n_embd)
        self.fc1 = nn.Linear(block_size * n_embd, n_hidden)
        self.fc2 = nn.Linear(n_hidden, vocab_size)

    def forward(self, idx):
        emb = self.emb(idx)
        h = torch.tanh(self.fc1(emb.view(emb.shape[0], -1)))
        return self.fc2(h)


def bigram(stoi, rng):
    V = len(stoi)
    N = torch.zeros((V, V), dtype=torch.int64)
    xs, ys = [], []
    for w in WORDS:
        chs = ["."] + list(w) + ["."]
        for ch1, ch2 in zip(chs, chs[1:]):
            N[stoi[ch1], stoi[ch2]] += 1
            xs.append(stoi[ch1])
            ys.append(stoi[ch2])
    P = (N + 1).double()
    P /= P.sum(1, keepdim=True)
    xs, ys = torch.tensor(xs), torch.tensor(ys)
    count_nll = -P[xs, ys].log().mean()
    W = torch.tensor(rng.standard_normal((V, V)), requires_grad=True)
    losses = []
    for _ in range(20):
        xenc = F.one_hot(xs, num_classes=V).double()
        logits = xenc @ W
        counts = logits.exp()
        probs = counts / counts.sum(1, keepdim=True)
        loss = -probs[torch.arange(len(xs)), ys].log().mean() + 0.01 * (W**2).mean()
        losses.append(loss.item())
        W.grad = None
        loss.backward()
        W.data += -10 * W.grad
    return count_nll.item(), losses, W.grad.numpy().copy()


def init(model, rng):
    with torch.no_grad():
        for p in model.parameters():
            p.copy_(torch.tensor(rng.standard_normal(tuple(p.shape)) * 0.3))


def sample(model, itos, block_size, generator):
    out, context = [], [0] * block_size
    with torch.no_grad():
        for _ in range(12):
            probs = F.softmax(model(torch.tensor([context])), dim=1)
            ix = torch.multinomial(probs, num_samples=1, generator=generator).item()
            context = context[1:] + [ix]
            if ix == 0:
                break
            out.append(itos[ix])
    return "".join(out)


def main(tmpdir):
    torch.set_default_dtype(torch.float64)
    rng = np.random.default_rng(3)
    chars = sorted(set("".join(WORDS)))
    stoi = {s: i + 1 for i, s in enumerate(chars)}
    stoi["."] = 0
    itos = {i: s for s, i in stoi.items()}
    count_nll, bigram_losses, bigram_grad = bigram(stoi, rng)

    block_size = 3
    ds = CharDataset(WORDS, stoi, block_size)
    order = rng.permutation(len(ds)).tolist()
    loader = DataLoader(ds, batch_size=16, sampler=order, drop_last=True)
    model = MLPLM(len(stoi), block_size, n_embd=4, n_hidden=16)
    init(model, rng)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.2, momentum=0.9)
    losses = []
    for xb, yb in loader:
        logits = model(xb)
        loss = F.cross_entropy(logits, yb)
        losses.append(loss.item())
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    grads = [bigram_grad] + [p.grad.numpy().copy() for p in model.parameters()]

    path = os.path.join(tmpdir, "char_mlp.pt")
    torch.save(model.state_dict(), path)
    again = MLPLM(len(stoi), block_size, n_embd=4, n_hidden=16)
    again.load_state_dict(torch.load(path))
    xb, yb = next(iter(DataLoader(ds, batch_size=32)))
    with torch.no_grad():
        reloaded = [F.cross_entropy(m(xb), yb).item() for m in (model, again)]
        probs = F.softmax(again(torch.tensor([[0] * block_size])), dim=1)
        top = torch.topk(probs, k=3, dim=1)
    g = torch.Generator().manual_seed(2147483647)
    names = [sample(again, itos, block_size, g) for _ in range(5)]
    return {
        "count_nll": count_nll,
        "bigram_losses": bigram_losses,
        "losses": losses,
        "grads": grads,
        "reloaded": reloaded,
        "top_values": top.values.numpy(),
        "exact": {"top_indices": top.indices.tolist(), "files": os.listdir(tmpdir)},
        "samples": names,
    }
