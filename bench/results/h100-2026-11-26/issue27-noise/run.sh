# Does a busy neighbour change a CUDA pass's return wait? Alternating: alone, then beside one busy-looping core.
source bench/gpu/setup.sh > /dev/null 2>&1
D=.device/perturb
for r in 1 2 3 4; do
  for way in alone busy; do
    if [ $way = busy ]; then python3 -c "while True: pass" & BUSY=$!; fi
    rm -rf /tmp/cs; timeout 60 python3 -m gputop.tui run $D/mm2_cuda.vmfb --device cuda --function mm2 --input @$D/mm2_in0.npy --input @$D/mm2_in1.npy --input @$D/mm2_in2.npy -n 300 --profile --profile-calls 100 --session-dir /tmp/cs --quiet > /dev/null 2>&1
    [ $way = busy ] && kill $BUSY && wait $BUSY 2>/dev/null
    python3 -c "
import json; r=json.load(open('/tmp/cs/report.json')); b=r['call_breakdown']; t=b['totals']; c=r['calls']
print('$way', 'round $r', 'wall %.3f host %.3f return_wait %.3f busy %.3f' % (b['wall_ms'], t['host_ms'], t['return_wait_ms'], t['device_busy_ms']), 'calls p50 %.3f p95 %.3f' % (c['p50_ms'], c['p95_ms']))"
  done
done
