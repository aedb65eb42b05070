// The view model's group tree (GET .../tree) packed into arrays, and the questions the viewer
// asks of it. At 100k nodes the tree is a few MB of JSON with a child list per group: the layout
// worker parses and packs it (``packTree``, pure), so the page receives a list of group ids and
// two Int32Arrays (moved, not copied) instead of parsing the JSON and building maps itself.

// {ids, parent, nodeGroup, nodes, root, defaults}: ``ids`` the groups in the tree's order,
// ``parent[g]`` the index of group g's parent (-1 for the root), ``nodeGroup[k]`` the index of
// the group directly holding node k (-1: none).
export function packTree(tree) {
  const at = new Map(tree.groups.map((g, i) => [g.id, i]));
  const parent = new Int32Array(tree.groups.length).fill(-1);
  const nodeGroup = new Int32Array(tree.nodes).fill(-1);
  tree.groups.forEach((g, i) => {
    for (const c of g.children) {
      if (c[0] === "n" && /^n\d+$/.test(c)) nodeGroup[Number(c.slice(1))] = i;
      else if (at.has(c)) parent[at.get(c)] = i;
    }
  });
  return { ids: tree.groups.map((g) => g.id), parent, nodeGroup, nodes: tree.nodes, root: tree.root, defaults: tree.default_expanded || [] };
}

// The buffers of a packed tree, for postMessage's transfer list.
export function treeBuffers(p) {
  return [p.parent.buffer, p.nodeGroup.buffer];
}

export class TreeIndex {
  constructor(packed) {
    Object.assign(this, packed);
    this._at = null; // group id -> index, made when first asked (not on the hand-over)
    this.children = null; // group index -> its child groups' indices, made when first asked
  }

  get at() {
    return (this._at ||= new Map(this.ids.map((id, i) => [id, i])));
  }

  has(group) {
    return this.at.has(group);
  }

  // The groups holding node ``k``, innermost first, the root left out.
  containers(k) {
    const out = [];
    let g = k >= 0 && k < this.nodeGroup.length ? this.nodeGroup[k] : -1;
    for (; g >= 0 && this.ids[g] !== this.root; g = this.parent[g]) out.push(this.ids[g]);
    return out;
  }

  // Every group below ``group``, itself included.
  below(group) {
    const out = new Set([group]);
    const start = this.at.get(group);
    if (start === undefined) return out;
    if (!this.children) this.children = childLists(this.parent);
    const stack = [start];
    while (stack.length) {
      for (const c of this.children[stack.pop()]) {
        out.add(this.ids[c]);
        stack.push(c);
      }
    }
    return out;
  }

  // Every group but the root.
  groups() {
    return this.ids.filter((g) => g !== this.root);
  }
}

function childLists(parent) {
  const lists = Array.from(parent, () => []);
  parent.forEach((p, i) => p >= 0 && lists[p].push(i));
  return lists;
}
