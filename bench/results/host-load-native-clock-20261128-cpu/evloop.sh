cd /work/main
E=examples/native/exploits
for i in $(seq 1 ${1:-10}); do
  build-test/bin/kjudge eval --task $E/saxpy/task.json --candidate $E/saxpy/honest.cpp --trials 20 --json 2>/dev/null | python3 -c "
import json,sys; r=json.load(sys.stdin); p=r.get('performance',{})
print(r['status'], *[round(p.get(k,0),1) for k in ('outsideWallMs','outsideBoundMs','inprocessSumMs','loopCpuWaitMs')], r.get('phaseSeconds',{}).get('candidate_runs'), flush=True)"
done
