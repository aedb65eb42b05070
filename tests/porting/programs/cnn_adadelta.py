"""A small CNN in the shape of PyTorch's MNIST example, trained with Adadelta and StepLR on
tiny random images through a DataLoader, then evaluated."""

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.optim as optim
from torch.optim.lr_scheduler import StepLR
from torch.utils.data import DataLoader, TensorDataset


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 4, 3, 1)
        self.conv2 = nn.Conv2d(4, 8, 3, 1)
        self.fc1 = nn.Linear(72, 16)
        self.fc2 = nn.Linear(16, 3)

    def forward(self, x):
        x = self.conv1(x)
        x = F.relu(x)
        x = self.conv2(x)
        x = F.relu(x)
        x = F.max_pool2d(x, 2)
        x = torch.flatten(x, 1)
        x = self.fc1(x)
        x = F.relu(x)
        x = self.fc2(x)
        return F.log_softmax(x, dim=1)


def train(model, device, train_loader, optimizer, losses):
    model.train()
    for data, target in train_loader:
        data, target = data.to(device), target.to(device)
        optimizer.zero_grad()
        output = model(data)
        loss = F.nll_loss(output, target)
        loss.backward()
        optimizer.step()
        losses.append(loss.item())


def test(model, device, test_loader):
    model.eval()
    test_loss, correct = 0, 0
    with torch.no_grad():
        for data, target in test_loader:
            data, target = data.to(device), target.to(device)
            output = model(data)
            test_loss += F.nll_loss(output, target, reduction="sum").item()
            pred = output.argmax(dim=1, keepdim=True)
            correct += pred.eq(target.view_as(pred)).sum().item()
    return test_loss / len(test_loader.dataset), correct


def main(tmpdir):
    torch.set_default_dtype(torch.float64)
    use_cuda = torch.cuda.is_available()
    device = torch.device("cuda" if use_cuda else "cpu")
    rng = np.random.default_rng(4)
    images = rng.standard_normal((12, 1, 10, 10))
    labels = rng.integers(0, 3, 12)
    dataset = TensorDataset(torch.tensor(images), torch.tensor(labels))
    train_loader = DataLoader(dataset, batch_size=4)
    test_loader = DataLoader(dataset, batch_size=6)
    model = Net().to(device)
    with torch.no_grad():
        for p in model.parameters():
            p.copy_(torch.tensor(rng.standard_normal(tuple(p.shape)) * 0.2))
    optimizer = optim.Adadelta(model.parameters(), lr=1.0)
    scheduler = StepLR(optimizer, step_size=1, gamma=0.7)
    losses, lrs, evals = [], [], []
    for _ in range(3):
        train(model, device, train_loader, optimizer, losses)
        evals.append(test(model, device, test_loader)[0])
        scheduler.step()
        lrs.append(scheduler.get_last_lr()[0])
    grads = [p.grad.numpy().copy() for p in model.parameters()]
    return {"losses": losses, "evals": evals, "lrs": lrs, "grads": grads}
