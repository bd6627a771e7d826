import sys, numpy as np, dataclasses
from m3gym.tasks.registry import make_task
from m3gym.tasks import render as R
from m3gym.audit.leaks import view_match_scores, answer_index
fam=sys.argv[1]; n=int(sys.argv[2])
wins=0; m=0; ranks=[]
for i in range(n):
    t=make_task(fam, 1_010_000_000+i)
    code=t.answer.value
    cands=[code]+R.single_edits(code)
    t2=dataclasses.replace(t, choices=tuple(cands))
    s=view_match_scores(t2)
    if s is None: continue
    m+=1
    others=np.sort(s[1:])[::-1]
    ranks.append(int((s[1:]>=s[0]).sum()))
    wins+= s[0]>others[4]
print(fam, m, 'answer beats the 5 best look-alikes', wins/m, 'median rank of answer among', len(cands), np.median(ranks))
