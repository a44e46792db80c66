import json,glob,statistics,collections,sys,math
q=float(sys.argv[1])
def qf(xs):
    xs=sorted(xs); k=math.ceil(q*len(xs))-1; return xs[k]
cov={'strict':[0,0],'compat':[0,0]}; widths=[]
for f in sorted(glob.glob('/tmp/r21/s*/out/results.jsonl')):
    rows=[json.loads(l) for l in open(f)]
    win=[]; out=[]
    for r in rows:
        if r.get('speedup',0)<=0 or r.get('ci_low',0)<=0: 
            if r.get('baseline_loop_shift',0)>0: win.append(r['baseline_loop_shift']); win=win[-64:]
            continue
        own=r.get('baseline_loop_shift',0)
        dev=qf(win) if len(win)>=8 else 0
        s=max(own,dev)
        lo=r['ci_low']*(1+own)/(1+s); hi=r['ci_high']/(1+own)*(1+s)
        out.append((r,lo,hi))
        if own>0: win.append(own); win=win[-64:]
    g=collections.defaultdict(list)
    for r,lo,hi in out:
        if r.get('phase')=='alone': g[(r['candidate'],r['mode'])].append((r,lo,hi))
    for (c,m),rs in g.items():
        sp=[r['speedup'] for r,_,_ in rs]
        if len(sp)<2: continue
        mid=statistics.median(sp)
        for r,lo,hi in rs:
            cov[m][1]+=1; cov[m][0]+= lo<=mid<=hi; widths.append(hi/lo-1)
print(q, cov, 'median width', round(statistics.median(widths),4))
