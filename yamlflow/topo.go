package yamlflow

import "container/heap"

// TopoOrder returns the node ids in an order where every node comes after
// the nodes it depends on. Among nodes that are ready at the same time the
// one written first in the file comes first, so the order is deterministic.
// Unknown dependencies are ignored; nodes caught in a cycle (which Load
// reports as an error) come last, in file order.
func TopoOrder(wf *Workflow) []string {
	if wf == nil {
		return nil
	}
	index := map[string]int{}
	for i, n := range wf.Nodes {
		if _, dup := index[n.ID]; !dup {
			index[n.ID] = i
		}
	}
	indeg := make([]int, len(wf.Nodes))
	dependents := make([][]int, len(wf.Nodes))
	for i, n := range wf.Nodes {
		if index[n.ID] != i {
			continue // a duplicate id: only the first node takes part
		}
		seen := map[int]bool{}
		for _, d := range n.DependsOn {
			j, ok := index[d]
			if !ok || seen[j] {
				continue
			}
			seen[j] = true
			indeg[i]++
			dependents[j] = append(dependents[j], i)
		}
	}
	ready := &intHeap{}
	for i, n := range wf.Nodes {
		if index[n.ID] == i && indeg[i] == 0 {
			heap.Push(ready, i)
		}
	}
	out := make([]string, 0, len(wf.Nodes))
	done := make([]bool, len(wf.Nodes))
	for ready.Len() > 0 {
		i := heap.Pop(ready).(int)
		done[i] = true
		out = append(out, wf.Nodes[i].ID)
		for _, j := range dependents[i] {
			if indeg[j]--; indeg[j] == 0 {
				heap.Push(ready, j)
			}
		}
	}
	for i, n := range wf.Nodes {
		if index[n.ID] == i && !done[i] {
			out = append(out, n.ID)
		}
	}
	return out
}

type intHeap []int

func (h intHeap) Len() int           { return len(h) }
func (h intHeap) Less(i, j int) bool { return h[i] < h[j] }
func (h intHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *intHeap) Push(x any)        { *h = append(*h, x.(int)) }
func (h *intHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}
