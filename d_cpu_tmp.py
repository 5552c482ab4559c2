import time, httpx, subprocess, multiprocessing, sys
from benchmarks.gateway_overhead import serve_upstream
from tests.support.service import running_api
def cpu(pid):
    tot=0
    for p in [pid]+[int(x) for x in subprocess.run(["pgrep","-P",str(pid)],capture_output=True,text=True).stdout.split()]:
        f=open(f"/proc/{p}/stat").read().split(")")[-1].split()
        tot+=int(f[11])+int(f[12])
    return tot/100
if __name__=="__main__":
    ours, theirs = multiprocessing.Pipe()
    up = multiprocessing.get_context("spawn").Process(target=serve_upstream, args=(0.0, theirs)); up.start()
    base=ours.recv()
    with running_api({"SWITCHBOARD_LLM_API_BASE": base}) as api:
        msgs=[{"role":"user","content":"What is the capital of Country007? "*20}]
        cases={"ready":("GET",api.base+"/ready",None),
               "modelSelect":("POST",api.base+"/v2/modelRouter/modelSelect",{"messages":msgs,"llm_providers":[{"provider":"openai","model":"gpt-4o-mini"},{"provider":"openai","model":"gpt-4o"}]}),
               "proxy":("POST",api.base+"/v1/chat/completions",{"model":"openai/gpt-4o-mini","messages":msgs}),
               "routed":("POST",api.base+"/v1/chat/completions",{"model":"switchboard","messages":msgs,"llm_providers":["openai/gpt-4o-mini","openai/gpt-4o"]}),
               "stream":("POST",api.base+"/v1/chat/completions",{"model":"openai/gpt-4o-mini","messages":msgs,"stream":True})}
        with httpx.Client() as c:
            for name,(m,u,b) in cases.items():
                for _ in range(20): c.request(m,u,json=b,headers=api.headers)
                c0=cpu(api.pid); t=time.perf_counter()
                for _ in range(300): r=c.request(m,u,json=b,headers=api.headers)
                print(name, r.status_code, f"server cpu per request {1000*(cpu(api.pid)-c0)/300:.2f} ms; wall {1000*(time.perf_counter()-t)/300:.2f} ms", flush=True)
    ours.send("x")
